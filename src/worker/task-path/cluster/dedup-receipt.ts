// The worker's side of deduplication (docs/deduplication.md), for a message
// with the `tsq_dedup` header. At receipt, a header no tsq sender took (a
// Python client set it by hand) is offered to the store as a tsq send would
// be: a duplicate is discarded (stored REVOKED, "deduplicated"), and a
// debounce is held for its ttl from its receipt, the last one received within
// the window being the one that runs. At its ETA a delayed one is claimed: a
// task replaced meanwhile is discarded, the standing one can no longer be
// replaced. When a simple-mode task ends (not a retry, not a requeue), its id
// is freed. A store that cannot be reached lets the task run (as Celery would,
// a possible duplicate) and says so.
import { lockSettings } from '../../../app/index.js'
import { DEDUP_HEADER, openDedupStore, readDedupHeader, receiptRequestOf, type DedupHeader } from '../../../locks/index.js'
import { taskLabel } from '../../../protocol/index.js'
import type { Holdings } from '../holdings.js'
import type { Request } from '../request.js'
import type { RunnerOptions } from '../runner-options.js'

export class DedupReceipt {
  private readonly read = new WeakMap<Request, DedupHeader | null>()

  constructor(
    private readonly o: RunnerOptions,
    private readonly holdings: Holdings,
    /** Records a duplicate's end without running it (outcomes.ts: REVOKED, "deduplicated"). */
    private readonly discard: (request: Request) => Promise<void>,
  ) {}

  /** The request's header, read once; null (one property read) for a message without one. */
  headerOf(request: Request): DedupHeader | null {
    const raw = request.delivery.properties?.headers?.[DEDUP_HEADER]
    if (raw === undefined) return null
    let header = this.read.get(request)
    if (header !== undefined) return header
    const got = readDedupHeader(raw)
    header = typeof got === 'string' ? null : got
    if (typeof got === 'string')
      this.o.log.warning(`Task ${taskLabel(request.name, request.id)}: its ${DEDUP_HEADER} header is ignored: ${got}`)
    this.read.set(request, header)
    return header
  }

  /** At receipt: undefined when there is nothing to ask; else whether the task goes on (false: discarded as a duplicate). */
  atReceipt(request: Request): Promise<boolean> | undefined {
    const header = this.headerOf(request)
    if (!header || header.at === 'send') return undefined
    return this.counted(this.offer(request, header))
  }

  private async offer(request: Request, header: DedupHeader): Promise<boolean> {
    const m = request.message
    const now = Date.now()
    let etaMs = m.eta ? Date.parse(m.eta) : 0
    // Debounce on receipt: the window runs from the receipt; the message's own ETA, if later, stands.
    if (header.mode === 'debounce' && header.ttl !== null && !(etaMs > now)) {
      etaMs = now + Math.round(header.ttl * 1000)
      m.eta = new Date(etaMs).toISOString()
    }
    const r = receiptRequestOf(m.task, header, m.id, etaMs > now ? etaMs : 0)
    let answer
    try {
      answer = await (await openDedupStore(lockSettings(this.o.app))).offer(r, now)
    } catch (error) {
      this.o.log.warning(`Task ${taskLabel(m.task, m.id)}: dedup store unreachable, run without deduplication: ${(error as Error).message}`)
      return true
    }
    if (answer.stands) {
      if (answer.replaced && this.o.log.enabled('INFO'))
        this.o.log.info(`Task ${taskLabel(m.task, m.id)} replaces ${answer.replaced} (dedup ${r.key}, ${r.mode})`)
      return true
    }
    this.o.log.info(`Task ${taskLabel(m.task, m.id)} is a duplicate of ${answer.taskId} (dedup ${r.key}, ${r.mode}): discarded`)
    await this.discard(request)
    return false
  }

  /** At its ETA, a delayed task with the header: undefined when it needs no claim; else whether it runs (false: replaced, discarded). */
  atEta(request: Request): Promise<boolean> | undefined {
    if (request.message.eta === null) return undefined
    const header = this.headerOf(request)
    if (!header) return undefined
    return this.counted(this.claim(request, header))
  }

  private async claim(request: Request, header: DedupHeader): Promise<boolean> {
    const m = request.message
    const key = receiptRequestOf(m.task, header, m.id, 0).key
    let answer
    try {
      answer = await (await openDedupStore(lockSettings(this.o.app))).claim(key, m.id)
    } catch (error) {
      this.o.log.warning(`Task ${taskLabel(m.task, m.id)}: dedup store unreachable at its ETA, run: ${(error as Error).message}`)
      return true
    }
    if (answer.go) return true
    this.o.log.info(`Task ${taskLabel(m.task, m.id)} was replaced by ${answer.by} (dedup ${key}, ${header.mode}): discarded`)
    await this.discard(request)
    return false
  }

  /** Whether its end frees its id: simple mode (throttle and debounce ids run out with their ttl). */
  freesAtEnd(request: Request): boolean {
    return this.headerOf(request)?.mode === 'simple'
  }

  /** The task ended: a simple-mode id it stands for is free. Undefined when there is nothing to free. */
  release(request: Request): Promise<void> | undefined {
    const header = this.headerOf(request)
    if (header?.mode !== 'simple') return undefined
    const m = request.message
    const key = receiptRequestOf(m.task, header, m.id, 0).key
    return openDedupStore(lockSettings(this.o.app))
      .then((store) => store.release(key, m.id))
      .then(
        () => undefined,
        (error: Error) => this.o.log.warning(`Could not free the dedup id ${key} of ${m.id} (rm it with tsq dedup rm): ${error.message}`),
      )
  }

  /** Counted while the store answers, so a shutdown waits for it as for a discard. */
  private async counted(asking: Promise<boolean>): Promise<boolean> {
    this.holdings.discarding += 1
    try {
      return await asking
    } finally {
      this.holdings.discarding -= 1
      this.holdings.wakeIdleWaiters()
    }
  }
}
