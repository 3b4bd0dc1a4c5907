// The part prefork and threads share: N slots, each a separate runtime that
// loads the user's module and runs one job at a time. A slot that is killed
// (hard time limit, terminate) or dies is replaced under the same index, so
// `%i` stays within 1..N.
//
// Keeping slots fed. A round trip to the worker per task (send the job, wait
// for its outcome, send the next) left each slot idle for most of a short
// task's life and cost three IPC messages per task. So a slot may hold a few
// jobs staged behind the one it runs, and goes on to the next as soon as one
// ends; what crosses is batched both ways (slot-messages.ts). The worker still
// sees each job start: the pool knows the order a slot runs its jobs in, so a
// staged job starts when the outcome before it arrives (or when the end hooks
// that outcome held are released), and Placement.started() says so then.
// Staging stays short: only behind a job that started less than SLOW_MS ago,
// only as deep as the slot's recent tasks finish in STAGE_BUDGET_S, never past
// --max-tasks-per-child, and the jobs staged behind a job that turns out slow
// are taken back and handed to the worker again (Placement.returned()), so a
// long task never holds up short ones that another slot could run.
//
// Starting slots. Prefork starts its N children with the worker, as Celery's
// prefork pool does. A pool that starts lazily (threads) starts a slot only
// when a job finds none idle, up to N, as Python's ThreadPoolExecutor starts a
// thread per submitted task up to its maximum: a worker thread is a V8 isolate
// with its own copy of tsq and the task module (5-7 MB each), which an idle
// worker then does not hold.
import { type StateSink, type Job, type Outcome, setLongTimeout } from '../../app/index.js'
import type { Placement, Pool, PoolKind, SlotInfo } from './pool.js'
import type { FromSlot } from './slot-messages.js'
import { taskLabel } from '../../protocol/index.js'
import { Entry, pickSlot, SLOW_MS, type Slot, type SlotHandle } from './slot.js'
import { SlotCrossings } from './slot-crossings.js'

export { SLOW_MS, type SlotHandle } from './slot.js'

export interface SlotPoolOptions {
  size: number
  maxTasksPerChild?: number
  /** KiB of resident memory after which a slot is replaced between tasks. */
  maxMemoryPerChild?: number
  log?: (level: 'info' | 'warning' | 'error', message: string) => void
  /**
   * A pool process exited (killed by a time limit or terminate, died, or a
   * cold shutdown): frees what it held outside itself (its task locks, see
   * app/execution/locked-run.ts) before its task's outcome is reported.
   */
  onLost?: (pid: number, threadId?: number) => Promise<void>
}

export abstract class SlotPool implements Pool {
  abstract readonly kind: PoolKind
  private readonly slots_ = new Map<number, Slot>()
  private closing = false
  /** Lost pool processes' locks being freed (onLost): a close waits for them. */
  private readonly lostReleases = new Set<Promise<void>>()
  private readonly crossings: SlotCrossings
  private sweepTimer: NodeJS.Timeout | undefined
  /** Woken when a slot becomes ready (jobs waiting for a slot being started). */
  private readonly readyWaiters = new Set<() => void>()
  /** When a slot started on demand last failed to load the app, and how long to wait before the next try. */
  private lazyFailure: { at: number; backoffMs: number } | undefined
  /** Slots start on demand (startsLazily) rather than all at start(). */
  protected readonly startsLazily: boolean = false
  /**
   * With startsLazily: a slot with nothing to do for this long exits, and is
   * started again when jobs need it (undefined: slots stay). Read once the
   * first slot is ready, so a subclass's field initialiser has run.
   */
  protected readonly idleExitMs: number | undefined = undefined
  private idleTimer: NodeJS.Timeout | undefined
  size: number

  constructor(protected readonly options: SlotPoolOptions) {
    this.size = options.size
    this.crossings = new SlotCrossings((slot, job, error) => this.handOffFailed(slot, job, error), options.log)
  }

  protected abstract spawn(index: number): SlotHandle

  async start({ eager = false }: { eager?: boolean } = {}): Promise<void> {
    if (this.startsLazily && !eager) return
    await Promise.all(Array.from({ length: this.size }, (_, i) => this.addSlot(i + 1)))
  }

  /**
   * A lazily started pool with no idle slot and fewer than `size` slots
   * starts one, at the lowest free index. A slot that cannot load the app
   * is not retried at once: the jobs wait, and the next try comes after a
   * backoff (1 s, doubling up to 30 s), each failure logged.
   */
  private startOnDemand(): void {
    if (!this.startsLazily || this.closing || this.slots_.size >= this.size) return
    const failure = this.lazyFailure
    if (failure && Date.now() - failure.at < failure.backoffMs) return
    let index = 1
    while (this.slots_.has(index)) index++
    if (index > this.size) return
    this.addSlot(index).then(
      () => (this.lazyFailure = undefined),
      (error: Error) => {
        this.lazyFailure = { at: Date.now(), backoffMs: Math.min(30_000, (this.lazyFailure?.backoffMs ?? 500) * 2) }
        this.options.log?.('error', `pool slot ${index} could not start: ${error.message}`)
      },
    )
  }

  private addSlot(index: number): Promise<void> {
    const handle = this.spawn(index)
    let resolveReady!: () => void
    let rejectReady!: (e: Error) => void
    const ready = new Promise<void>((resolve, reject) => {
      resolveReady = resolve
      rejectReady = reject
    })
    const slot: Slot = {
      index,
      handle,
      ready,
      isReady: false,
      queue: [],
      outbox: [],
      tasksRun: 0,
      retiring: false,
      draining: false,
      exiting: false,
      stopped: false,
      unstageWaiters: [],
      avgRuntime: 0,
      lastActive: Date.now(),
    }
    // On demand, a slot that never became ready is not replaced on its exit: startOnDemand retries, with a backoff.
    let everReady = false
    void ready.then(
      () => (everReady = true),
      () => undefined,
    )
    this.slots_.set(index, slot)
    handle.onMessage((batch) => {
      for (const message of batch) this.onSlotMessage(slot, message, resolveReady, rejectReady)
    })
    handle.onExit((code, signal) => {
      rejectReady(new Error(`pool process exited (${signal ?? code}) before it was ready`))
      slot.isReady = false
      slot.holding = undefined
      this.crossings.forget(slot)
      const entries = slot.queue.splice(0)
      const head = entries[0]?.since !== undefined ? entries.shift() : undefined
      // Settled even when a newer slot took the index (autoscale grew while this one retired).
      if (head) {
        head.timer?.clear()
        const killed: Outcome = {
          status: 'killed',
          reason: head.killReason ?? 'worker-lost',
          signal: head.signal ?? signal ?? null,
          runtime: (Date.now() - head.since!) / 1000,
        }
        // Its locks are freed first, so the run its message's retry (or the next of its key) finds them free.
        const freeing = this.options.onLost?.(handle.pid, handle.threadId)
        if (freeing) {
          const settled = freeing.catch(() => undefined).then(() => head.settle(killed))
          this.lostReleases.add(settled)
          void settled.finally(() => this.lostReleases.delete(settled))
        } else head.settle(killed)
      }
      // The jobs staged behind it never started: the worker places them again.
      this.giveBack(entries)
      for (const wake of slot.unstageWaiters.splice(0)) wake()
      if (this.slots_.get(index) !== slot) return
      this.slots_.delete(index)
      // Jobs waiting for a slot while this one was leaving idle: room for a new one now.
      if (slot.retiring) {
        for (const wake of this.readyWaiters) wake()
        this.readyWaiters.clear()
      }
      if (!this.closing && !slot.retiring && index <= this.size && (everReady || !this.startsLazily)) {
        if (!head && code !== 0)
          this.options.log?.('error', `Process ${handle.pid} (index ${index}) exited unexpectedly (${signal ?? code}); replacing it`)
        void this.addSlot(index).catch((e: Error) => this.options.log?.('error', `could not replace pool process ${index}: ${e.message}`))
      }
    })
    return ready
  }

  private onSlotMessage(slot: Slot, message: FromSlot, resolveReady: () => void, rejectReady: (e: Error) => void): void {
    switch (message.type) {
      case 'done':
        this.finish(slot, message.id, message.outcome, message.rss)
        break
      case 'succeeded': {
        const items = message.items
        for (let i = 0; i < items.length; i += 3)
          this.finish(slot, items[i] as string, { status: 'success', value: items[i + 1], runtime: items[i + 2] as number })
        break
      }
      case 'state': {
        // Sent before the slot's 'done' on the same channel, so it is handed on first.
        // The sink logs its own failures; the task in the slot has already moved on.
        const entry = slot.queue.find((e) => e.job.id === message.id)
        // Its start was held back (asked back, see startNext): it runs.
        if (entry && entry.since === undefined && entry === slot.queue[0]) this.begin(slot, entry)
        if (entry) void Promise.resolve(entry.sink?.(message.id, message.state, message.meta)).catch(() => undefined)
        break
      }
      case 'unstaged':
        this.unstaged(slot, message.ids, message.reply)
        if (message.reply) slot.unstageWaiters.shift()?.()
        break
      case 'ready':
        slot.isReady = true
        slot.lastActive = Date.now()
        this.watchIdle()
        resolveReady()
        for (const wake of this.readyWaiters) wake()
        this.readyWaiters.clear()
        break
      case 'load-error':
        rejectReady(new Error(message.message))
        break
    }
  }

  /**
   * A job that never reached its slot: out of the slot's queue (the slot
   * takes its next job), and rejected, not requeued, since it would fail the
   * same way every time it came back.
   */
  private handOffFailed(slot: Slot, job: Job, error: unknown): void {
    const i = slot.queue.findIndex((e) => e.job === job)
    if (i < 0) return
    const entry = slot.queue[i]!
    slot.queue.splice(i, 1)
    entry.timer?.clear()
    const reason = `could not be handed to pool process ${slot.handle.pid} (index ${slot.index}): ${(error as Error)?.message ?? String(error)}`
    this.options.log?.('error', `Task ${job.task}[${job.id}] ${reason}; rejected, not requeued`)
    // The worker sees it start and end at once, so it is never left counted as reserved or active.
    if (entry.since === undefined) {
      entry.since = Date.now()
      entry.placement?.started()
    }
    entry.settle({ status: 'rejected', requeue: false, reason, runtime: 0 })
    if (i === 0) this.startNext(slot)
    this.exitIfDrained(slot)
  }

  // ---- ends ------------------------------------------------------------

  private finish(slot: Slot, id: string, outcome: Outcome, rss?: number): void {
    const entry = slot.queue[0]
    if (entry?.job.id !== id) return
    // Its start was held back (asked back, see startNext): its outcome says it started.
    if (entry.since === undefined) this.begin(slot, entry)
    slot.queue.shift()
    entry.timer?.clear()
    slot.lastActive = Date.now()
    slot.tasksRun += 1
    slot.avgRuntime = slot.avgRuntime === 0 ? outcome.runtime : slot.avgRuntime * 0.8 + outcome.runtime * 0.2
    if (outcome.endHooks) slot.holding = id
    entry.settle(outcome)
    const maxKiB = this.options.maxMemoryPerChild
    const overMemory = maxKiB !== undefined && rss !== undefined && rss / 1024 > maxKiB
    if (overMemory) {
      this.options.log?.(
        'warning',
        `Pool process ${slot.handle.pid} (index ${slot.index}) uses ${Math.round(rss / 1024)} KiB, over --max-memory-per-child ${maxKiB} KiB; replacing it`,
      )
      // The slot gave back what it held before this outcome, and gives back whatever reaches it now.
      slot.stopped = true
      slot.draining = true
    }
    const max = this.options.maxTasksPerChild
    if (slot.retiring || (max && slot.tasksRun >= max)) this.drain(slot)
    this.startNext(slot)
    this.exitIfDrained(slot)
  }

  /**
   * The slot's next job starts now: the slot goes on to it as soon as the one
   * before it ended (or its held hooks were released), or as soon as it
   * arrives. Not a job asked back (`unstaging`): the slot may read the
   * 'unstage' first and give it back; its answer (or the job's own outcome)
   * tells. Nor on a slot that stopped taking jobs: all it has not started
   * comes back.
   */
  private startNext(slot: Slot): void {
    const next = slot.queue[0]
    if (!next || next.since !== undefined || next.unstaging || slot.holding || slot.stopped) return
    this.begin(slot, next)
  }

  private begin(slot: Slot, entry: Entry): void {
    entry.since = Date.now()
    const { timeLimit, job } = entry
    if (timeLimit && timeLimit > 0) {
      entry.timer = setLongTimeout(() => {
        if (slot.queue[0] !== entry) return
        this.options.log?.('error', `Hard time limit (${timeLimit}s) exceeded for ${taskLabel(job.task, job.id)}`)
        entry.killReason = 'time-limit'
        entry.signal = 'SIGKILL'
        slot.handle.kill('SIGKILL')
      }, timeLimit * 1000)
    }
    entry.placement?.started()
  }

  afterStored(taskId: string): void {
    for (const slot of this.slots_.values()) {
      if (slot.holding !== taskId) continue
      slot.holding = undefined
      this.crossings.sendSoon(slot, { type: 'stored', id: taskId })
      this.startNext(slot)
      // Its 'exit' goes after the 'stored' that runs the held hooks.
      this.exitIfDrained(slot)
      return
    }
  }

  /** No more jobs for this slot: the staged ones go back, and it exits (to be replaced unless retiring) once empty. */
  private drain(slot: Slot): void {
    if (slot.draining) return
    slot.draining = true
    void this.unstageFrom(slot)
  }

  private exitIfDrained(slot: Slot): void {
    if (!slot.draining || slot.exiting || slot.queue.length > 0 || slot.holding) return
    slot.exiting = true
    this.crossings.sendSoon(slot, { type: 'exit' })
  }

  // ---- staging and giving back -----------------------------------------

  /**
   * Asks the slot for the jobs it has not started (of `ids`, else all): by
   * id, so a job the worker counts as started is never among them. Resolves
   * with its answer (or its exit).
   */
  private unstageFrom(slot: Slot, ids?: ReadonlySet<string>): Promise<void> {
    const asked = slot.queue.filter((e) => e.since === undefined && !e.unstaging && (!ids || ids.has(e.job.id)))
    if (asked.length === 0) return Promise.resolve()
    for (const e of asked) e.unstaging = true
    return new Promise<void>((resolve) => {
      slot.unstageWaiters.push(resolve)
      this.crossings.sendSoon(slot, { type: 'unstage', ids: asked.map((e) => e.job.id) })
    })
  }

  /** The slot gave these back unstarted; `reply`: the answer to an 'unstage'. */
  private unstaged(slot: Slot, ids: string[], reply: boolean): void {
    const back = new Set(ids)
    const entries = back.size > 0 ? slot.queue.filter((e) => back.has(e.job.id) && e.since === undefined) : []
    if (entries.length > 0) slot.queue = slot.queue.filter((e) => !back.has(e.job.id) || e.since !== undefined)
    // The last answer due covers every job asked back: one not given back had started.
    const last = reply && slot.unstageWaiters.length === 1
    if (last) for (const e of slot.queue) e.unstaging = false
    this.giveBack(entries)
    // One asked back and not given back had started (its start was held back, see startNext).
    if (last) this.startNext(slot)
    this.exitIfDrained(slot)
  }

  /** Unstarted jobs go back to the worker, last first. */
  private giveBack(entries: Entry[]): void {
    for (let i = entries.length - 1; i >= 0; i--) {
      const e = entries[i]!
      if (e.placement) e.placement.returned()
      // run() only ever places on an idle slot, so its jobs start at once; should one not, it is reported lost.
      else e.settle({ status: 'killed', reason: 'worker-lost', signal: null, runtime: 0 })
    }
  }

  private pick(stage: boolean): Slot | undefined {
    return pickSlot(this.slots_.values(), stage, false, this.options.maxTasksPerChild)
  }

  canPlace(): boolean {
    return this.pick(true) !== undefined
  }

  place(job: Job, timeLimit: number | null, sink: StateSink | undefined, placement: Placement): Promise<Outcome> {
    const entry = new Entry(job, timeLimit, sink, placement)
    // Started on demand: with no idle slot and room for one, a new slot, not staging behind a busy one
    // (until it is ready, the job goes to whichever slot can take it first).
    if (this.startsLazily && !this.pick(false) && this.slots_.size < this.size) {
      this.startOnDemand()
      return this.waitForSlot(true).then((s) => this.assign(s, entry))
    }
    // canPlace() said yes a moment ago; a slot that turned slow since still takes it, in order.
    const slot = this.pick(true) ?? pickSlot(this.slots_.values(), true, true, this.options.maxTasksPerChild)
    if (slot) return this.assign(slot, entry)
    return this.waitForSlot(true).then((s) => this.assign(s, entry))
  }

  async run(job: Job, timeLimit: number | null, sink?: StateSink): Promise<Outcome> {
    const slot = this.pick(false) ?? (this.startOnDemand(), await this.waitForSlot(false))
    return this.assign(slot, new Entry(job, timeLimit, sink, undefined))
  }

  private assign(slot: Slot, entry: Entry): Promise<Outcome> {
    return new Promise<Outcome>((settle) => {
      entry.settle = settle
      slot.lastActive = Date.now()
      slot.queue.push(entry)
      this.crossings.sendJob(slot, entry.job)
      if (slot.queue.length === 1 && !slot.holding) this.begin(slot, entry)
      else this.sweepSoon()
    })
  }

  private async waitForSlot(stage: boolean): Promise<Slot> {
    for (let attempt = 0; ; attempt++) {
      const slot = this.pick(stage)
      if (slot) return slot
      if (this.closing) throw new Error('pool is closing')
      // After a failed start on demand, the next try (its backoff permitting); not while one is starting.
      if (this.startsLazily && [...this.slots_.values()].every((s) => s.isReady)) this.startOnDemand()
      // A slot being replaced (after a kill) or started comes back within moments: woken when it is ready.
      await new Promise<void>((r) => {
        const wake = (): void => {
          clearTimeout(timer)
          this.readyWaiters.delete(wake)
          r()
        }
        const timer = setTimeout(wake, Math.min(200, 10 * (attempt + 1)))
        this.readyWaiters.add(wake)
      })
    }
  }

  private watchIdle(): void {
    if (!this.startsLazily || this.idleExitMs === undefined || this.idleTimer || this.closing) return
    this.idleTimer = setInterval(this.exitIdle, Math.max(50, this.idleExitMs / 4))
    this.idleTimer.unref()
  }

  /**
   * Slots idle for idleExitMs leave as autoscale's shrink makes them leave
   * (retiring: not replaced); the pool's size is unchanged, so the next jobs
   * start them again on demand.
   */
  private readonly exitIdle = (): void => {
    const now = Date.now()
    for (const slot of this.slots_.values()) {
      if (!slot.isReady || slot.queue.length > 0 || slot.holding || slot.draining || slot.exiting || slot.retiring) continue
      if (now - slot.lastActive < this.idleExitMs!) continue
      slot.retiring = true
      this.drain(slot)
      this.exitIfDrained(slot)
    }
    if (this.slots_.size === 0 && this.idleTimer) {
      clearInterval(this.idleTimer)
      this.idleTimer = undefined
    }
  }

  /** Checks now and then, while jobs are staged, for a slot whose running job turned slow: its staged jobs go back. */
  private sweepSoon(): void {
    if (this.sweepTimer) return
    this.sweepTimer = setTimeout(this.sweep, SLOW_MS / 2)
    this.sweepTimer.unref()
  }

  private readonly sweep = (): void => {
    this.sweepTimer = undefined
    const now = Date.now()
    let staged = false
    for (const slot of this.slots_.values()) {
      const head = slot.queue[0]
      if (!head || slot.queue.length === (head.since === undefined ? 0 : 1)) continue
      if (slot.unstageWaiters.length === 0 && head.since !== undefined && now - head.since > SLOW_MS) void this.unstageFrom(slot)
      else staged = true
    }
    if (staged) this.sweepSoon()
  }

  async unstage(ids?: readonly string[]): Promise<void> {
    const wanted = ids ? new Set(ids) : null
    const answers: Promise<void>[] = []
    for (const slot of this.slots_.values()) {
      if (!slot.queue.some((e) => e.since === undefined && (!wanted || wanted.has(e.job.id)))) continue
      // Those asked back already are not asked again: their answers are waited for too.
      void this.unstageFrom(slot, wanted ?? undefined)
      answers.push(this.answered(slot))
    }
    await Promise.all(answers)
  }

  /** Resolves once every answer now due from the slot has come (or it exited). */
  private answered(slot: Slot): Promise<void> {
    const n = slot.unstageWaiters.length
    if (n === 0) return Promise.resolve()
    const last = slot.unstageWaiters[n - 1]!
    return new Promise<void>((resolve) => {
      slot.unstageWaiters[n - 1] = () => {
        last()
        resolve()
      }
    })
  }

  /** The slot and position of a job sent and not ended. */
  private locate(taskId: string): { slot: Slot; entry: Entry } | undefined {
    for (const slot of this.slots_.values()) {
      const entry = slot.queue.find((e) => e.job.id === taskId)
      if (entry) return { slot, entry }
    }
    return undefined
  }

  terminate(taskId: string, signal: NodeJS.Signals | number): boolean {
    const found = this.locate(taskId)
    if (!found) return false
    const { slot, entry } = found
    // Not started: it goes back to the worker, which discards it as revoked.
    if (entry.since === undefined) {
      void this.unstageFrom(slot, new Set([taskId]))
      return false
    }
    entry.killReason = 'terminated'
    entry.signal = typeof signal === 'number' ? String(signal) : signal
    slot.handle.kill(signal)
    return true
  }

  abort(taskId: string): void {
    const found = this.locate(taskId)
    if (!found) return
    const { slot, entry } = found
    if (entry.since === undefined) {
      void this.unstageFrom(slot, new Set([taskId]))
    } else this.crossings.sendSoon(slot, { type: 'abort', id: taskId, reason: 'revoked' })
  }

  async grow(n: number): Promise<void> {
    const from = this.size
    this.size += n
    // The new room is taken when jobs need it.
    if (this.startsLazily) return
    await Promise.all(Array.from({ length: n }, (_, i) => this.addSlot(from + i + 1)))
  }

  async shrink(n: number): Promise<void> {
    const target = Math.max(1, this.size - n)
    // Highest indexes go first, so the survivors keep 1..target.
    for (let index = this.size; index > target; index--) {
      const slot = this.slots_.get(index)
      if (!slot) continue
      slot.retiring = true
      // A busy slot exits when its task is done, after the hooks it holds.
      this.drain(slot)
      this.exitIfDrained(slot)
    }
    this.size = target
  }

  slots(): SlotInfo[] {
    return [...this.slots_.values()]
      .sort((a, b) => a.index - b.index)
      .map((s) => {
        const head = s.queue[0]?.since !== undefined ? s.queue[0] : undefined
        return { index: s.index, pid: s.handle.pid, taskId: head?.job.id ?? null, since: head?.since ?? null }
      })
  }

  processes(): number[] {
    return this.slots().map((s) => s.pid)
  }

  async close({ cold }: { cold: boolean }): Promise<void> {
    this.closing = true
    if (this.sweepTimer) clearTimeout(this.sweepTimer)
    if (this.idleTimer) clearInterval(this.idleTimer)
    const exits = [...this.slots_.values()].map(
      (slot) =>
        new Promise<void>((resolve) => {
          slot.handle.onExit(() => resolve())
          const head = slot.queue[0]
          if (cold && head?.since !== undefined) {
            head.killReason = 'terminated'
            slot.handle.kill('SIGKILL')
          } else {
            slot.exiting = true
            slot.outbox.push({ type: 'exit' })
            this.crossings.flush(slot)
          }
          setTimeout(() => {
            slot.handle.kill('SIGKILL')
            resolve()
          }, 3000).unref()
        }),
    )
    await Promise.all(exits)
    await Promise.all([...this.lostReleases])
  }
}
