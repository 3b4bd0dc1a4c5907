// One BRPOP at a time over every ready queue, on a connection of its own so that
// a 1 s block never stalls publishes or acks (kombu's MultiChannelPoller, BullMQ's
// blocking connection). When the set of ready queues changes mid-block, CLIENT
// UNBLOCK ends the wait early instead of letting a new consumer sit for 1 s.
import type { Redis } from 'ioredis'
import { brpopKeys } from './keys.js'

export interface BrpopTarget {
  /** Queues to wait on now, in cycle order; empty means wait for a nudge. */
  readyQueues(): string[]
  /** A message was popped from list `key` of `queue`. */
  deliver(queue: string, key: string, raw: string): Promise<void>
  /** A BRPOP came back empty. */
  idle(): void
  /** The BRPOP failed (typically the connection dropped). */
  failed(error: unknown): void
  /** Queues with acking consumers are claimed atomically (pop + unacked) instead of BRPOPped. */
  wantsClaim(queues: string[]): boolean
  /** Pops and records in one step, as many as the consumers have room for; empty when every list is empty. */
  claim(keys: string[], queues: string[]): Promise<Array<{ key: string; raw: string; recorded: boolean }>>
  /** A claimed message: already in `unacked` when recorded. */
  deliverClaimed(queue: string, key: string, raw: string, recorded: boolean): Promise<void>
  /** Records what a BLMOVE moved from `source` into the loop's staging list for it. */
  claimStaged(source: string): Promise<{ raw: string; recorded: boolean } | null>
  /** The staging list this loop moves messages of `source` into. */
  stagingFor(source: string): string
}

/**
 * While idle, the loop blocks on the first ready list (BLMOVE into its staging
 * list, so it waits in line with Celery's own BRPOP consumers) and polls every
 * list, including priority sub-lists, at least this often.
 */
const CLAIM_BLOCK_SECONDS = 0.2

const BRPOP_TIMEOUT_SECONDS = 1

export class BrpopLoop {
  private stopping = false
  /** Sources whose staging list may hold a message whose claim did not complete. */
  private readonly unstaged = new Set<string>()
  private running: Promise<void> | undefined
  private wake: (() => void) | undefined
  private blockedOn: string | undefined
  private clientId: number | undefined
  private readonly onReady = (): void => {
    this.clientId = undefined
    // Sent from the 'ready' listener, so it goes out before anything queued offline.
    this.conn.client('ID').then(
      (id) => {
        this.clientId = Number(id)
      },
      () => undefined,
    )
    this.wake?.()
  }

  constructor(
    private readonly conn: Redis,
    private readonly control: Redis,
    private readonly target: BrpopTarget,
    private readonly queueOf: (key: string) => string,
  ) {
    conn.on('ready', this.onReady)
    if (conn.status === 'ready') this.onReady()
  }

  start(): void {
    this.running ??= this.run()
  }

  /** Something changed (consumer added, cancelled, room freed): re-evaluate the queues. */
  nudge(): void {
    if (this.wake) {
      this.wake()
      return
    }
    if (this.blockedOn === undefined || this.clientId === undefined) return
    if (this.target.readyQueues().join('\n') === this.blockedOn) return
    // Unblocking makes BRPOP return nil, as a timeout would: nothing can be lost.
    this.control.client('UNBLOCK', this.clientId).catch(() => undefined)
  }

  async stop(): Promise<void> {
    this.stopping = true
    this.nudge()
    if (this.blockedOn !== undefined && this.clientId !== undefined) {
      await this.control.client('UNBLOCK', this.clientId).catch(() => undefined)
    }
    let timer: NodeJS.Timeout | undefined
    const settled = await Promise.race([
      (this.running ?? Promise.resolve()).then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), (BRPOP_TIMEOUT_SECONDS + 1) * 1000)
      }),
    ])
    clearTimeout(timer)
    // A BRPOP parked while the broker is unreachable would wait forever: drop it.
    if (!settled) {
      this.conn.disconnect()
      await this.running
    }
    this.conn.off('ready', this.onReady)
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        if (this.wake === done) this.wake = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wake = done
    })
  }

  private async run(): Promise<void> {
    let failures = 0
    while (!this.stopping) {
      if (this.conn.status !== 'ready') {
        await this.sleep(200)
        continue
      }
      const queues = this.target.readyQueues()
      if (queues.length === 0) {
        await this.sleep(1000)
        continue
      }
      if (this.target.wantsClaim(queues)) {
        let claimed: Awaited<ReturnType<BrpopTarget['claim']>>
        try {
          claimed = await this.target.claim(brpopKeys(queues), queues)
          failures = 0
        } catch (error) {
          if (this.stopping) break
          this.target.failed(error)
          failures += 1
          await this.sleep(Math.min(100 * failures, 1000))
          continue
        }
        if (claimed.length > 0) {
          for (const one of claimed) await this.target.deliverClaimed(this.queueOf(one.key), one.key, one.raw, one.recorded)
          continue
        }
        const source = brpopKeys(queues)[0]!
        let moved: string | null
        this.blockedOn = queues.join('\n')
        try {
          moved = await this.conn.blmove(source, this.target.stagingFor(source), 'RIGHT', 'LEFT', CLAIM_BLOCK_SECONDS)
        } catch (error) {
          this.blockedOn = undefined
          // The reply may have been lost after the move: take whatever is staged next time round.
          this.unstaged.add(source)
          if (this.stopping) break
          this.target.failed(error)
          failures += 1
          await this.sleep(Math.min(100 * failures, 1000))
          continue
        }
        this.blockedOn = undefined
        if (moved === null && !this.unstaged.has(source)) {
          this.target.idle()
          continue
        }
        this.unstaged.delete(source)
        let staged: Awaited<ReturnType<BrpopTarget['claimStaged']>>
        try {
          staged = await this.target.claimStaged(source)
        } catch (error) {
          this.unstaged.add(source)
          this.target.failed(error)
          continue
        }
        if (staged) await this.target.deliverClaimed(this.queueOf(source), source, staged.raw, staged.recorded)
        continue
      }
      let popped: [string, string] | null
      this.blockedOn = queues.join('\n')
      try {
        popped = await this.conn.brpop(...brpopKeys(queues), BRPOP_TIMEOUT_SECONDS)
        failures = 0
      } catch (error) {
        this.blockedOn = undefined
        if (this.stopping) break
        this.target.failed(error)
        failures += 1
        await this.sleep(Math.min(100 * failures, 1000))
        continue
      }
      this.blockedOn = undefined
      if (!popped) {
        this.target.idle()
        continue
      }
      const [key, raw] = popped
      await this.target.deliver(this.queueOf(key), key, raw)
    }
  }
}
