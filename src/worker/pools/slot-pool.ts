// The part prefork and threads share: N slots, each a separate runtime that
// loads the user's module and runs one job at a time. A slot that is killed
// (hard time limit, terminate) or dies is replaced under the same index, so
// `%i` stays within 1..N.
import type { StateSink } from '../../app/task-context.js'
import type { Job, Outcome, FromSlot, ToSlot } from './jobs.js'
import type { Pool, PoolKind, SlotInfo } from './pool.js'

export interface SlotHandle {
  readonly pid: number
  send(message: ToSlot): void
  kill(signal: NodeJS.Signals | number): void
  onMessage(listener: (message: FromSlot) => void): void
  onExit(listener: (code: number | null, signal: string | null) => void): void
}

interface Slot {
  index: number
  handle: SlotHandle
  ready: Promise<void>
  job: { job: Job; since: number; settle: (o: Outcome) => void; sink?: StateSink; timer?: NodeJS.Timeout; killReason?: 'time-limit' | 'terminated'; signal?: string | null } | null
  tasksRun: number
  retiring: boolean
  /** Told to exit between tasks (to be replaced): no new job may be placed on it. */
  exiting?: boolean
  /** The task whose end hooks the slot holds until the worker has stored its result (afterStored). */
  holding?: string
  /** Replace the slot once it has run the end hooks it holds. */
  retireWhenReleased?: boolean
}

export interface SlotPoolOptions {
  size: number
  maxTasksPerChild?: number
  /** KiB of resident memory after which a slot is replaced between tasks. */
  maxMemoryPerChild?: number
  log?: (level: 'info' | 'warning' | 'error', message: string) => void
}

export abstract class SlotPool implements Pool {
  abstract readonly kind: PoolKind
  private readonly slots_ = new Map<number, Slot>()
  /** Slots promised to a run() that has not set slot.job yet: without this two concurrent runs can pick the same slot, and one task is never run. */
  private readonly claimed = new Set<Slot>()
  private closing = false
  size: number

  constructor(protected readonly options: SlotPoolOptions) {
    this.size = options.size
  }

  protected abstract spawn(index: number): SlotHandle

  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.size }, (_, i) => this.addSlot(i + 1)))
  }

  private addSlot(index: number): Promise<void> {
    const handle = this.spawn(index)
    let resolveReady!: () => void
    let rejectReady!: (e: Error) => void
    const ready = new Promise<void>((resolve, reject) => {
      resolveReady = resolve
      rejectReady = reject
    })
    const slot: Slot = { index, handle, ready, job: null, tasksRun: 0, retiring: false }
    this.slots_.set(index, slot)
    handle.onMessage((message) => {
      switch (message.type) {
        case 'ready':
          resolveReady()
          break
        case 'load-error':
          rejectReady(new Error(message.message))
          break
        case 'done':
          if (slot.job?.job.id === message.id) this.finish(slot, message.outcome, message.rss)
          break
        case 'state':
          // Sent before the slot's 'done' on the same channel, so it is handed on first.
          // The sink logs its own failures; the task in the slot has already moved on.
          if (slot.job?.job.id === message.id) void Promise.resolve(slot.job.sink?.(message.id, message.state, message.meta)).catch(() => undefined)
          break
        case 'started':
          break
      }
    })
    handle.onExit((code, signal) => {
      rejectReady(new Error(`pool process exited (${signal ?? code}) before it was ready`))
      slot.holding = undefined
      const hadJob = slot.job !== null
      // Settled even when a newer slot took the index (autoscale grew while this one retired).
      if (slot.job) {
        const reason = slot.job.killReason ?? 'worker-lost'
        this.finish(slot, { status: 'killed', reason, signal: slot.job.signal ?? signal ?? null, runtime: (Date.now() - slot.job.since) / 1000 })
      }
      if (this.slots_.get(index) !== slot) return
      this.slots_.delete(index)
      if (!this.closing && !slot.retiring && index <= this.size) {
        if (!hadJob && code !== 0) this.options.log?.('error', `Process ${handle.pid} (index ${index}) exited unexpectedly (${signal ?? code}); replacing it`)
        void this.addSlot(index).catch((e: Error) => this.options.log?.('error', `could not replace pool process ${index}: ${e.message}`))
      }
    })
    return ready
  }

  private finish(slot: Slot, outcome: Outcome, rss?: number): void {
    const entry = slot.job
    if (!entry) return
    slot.job = null
    if (entry.timer) clearTimeout(entry.timer)
    slot.tasksRun += 1
    if (outcome.endHooks) slot.holding = entry.job.id
    entry.settle(outcome)
    const max = this.options.maxTasksPerChild
    if (outcome.status === 'killed') return
    const maxKiB = this.options.maxMemoryPerChild
    const overMemory = maxKiB !== undefined && rss !== undefined && rss / 1024 > maxKiB
    if (overMemory) this.options.log?.('warning', `Pool process ${slot.handle.pid} (index ${slot.index}) uses ${Math.round(rss / 1024)} KiB, over --max-memory-per-child ${maxKiB} KiB; replacing it`)
    if (!(slot.retiring || overMemory || (max && slot.tasksRun >= max))) return
    // Its 'exit' must come after the 'stored' that runs the held hooks.
    if (slot.holding) slot.retireWhenReleased = true
    else this.retire(slot)
  }

  afterStored(taskId: string): void {
    for (const slot of this.slots_.values()) {
      if (slot.holding !== taskId) continue
      slot.holding = undefined
      slot.handle.send({ type: 'stored', id: taskId })
      if (slot.retireWhenReleased) this.retire(slot)
      return
    }
  }

  /** Replaces a slot between tasks (max-tasks-per-child): the exit handler starts the new one. */
  private retire(slot: Slot): void {
    slot.exiting = true
    slot.handle.send({ type: 'exit' })
  }

  async run(job: Job, timeLimit: number | null, sink?: StateSink): Promise<Outcome> {
    const slot = await this.idleSlot()
    this.claimed.delete(slot)
    return new Promise<Outcome>((settle) => {
      slot.job = { job, since: Date.now(), settle, sink }
      if (timeLimit && timeLimit > 0) {
        slot.job.timer = setTimeout(() => {
          if (slot.job?.job.id !== job.id) return
          this.options.log?.('error', `Hard time limit (${timeLimit}s) exceeded for ${job.task}[${job.id}]`)
          slot.job.killReason = 'time-limit'
          slot.job.signal = 'SIGKILL'
          slot.handle.kill('SIGKILL')
        }, timeLimit * 1000)
      }
      slot.handle.send({ type: 'run', job })
    })
  }

  private async idleSlot(): Promise<Slot> {
    for (let attempt = 0; ; attempt++) {
      for (const slot of this.slots_.values()) {
        if (slot.job || slot.holding || slot.retiring || slot.exiting || this.claimed.has(slot)) continue
        try {
          await slot.ready
        } catch {
          continue
        }
        if (!slot.job && !slot.holding && !slot.exiting && !this.claimed.has(slot) && this.slots_.get(slot.index) === slot) {
          this.claimed.add(slot)
          return slot
        }
      }
      if (this.closing) throw new Error('pool is closing')
      // A slot being replaced (after a kill) comes back within moments.
      await new Promise((r) => setTimeout(r, Math.min(200, 10 * (attempt + 1))))
    }
  }

  terminate(taskId: string, signal: NodeJS.Signals | number): boolean {
    for (const slot of this.slots_.values()) {
      if (slot.job?.job.id !== taskId) continue
      slot.job.killReason = 'terminated'
      slot.job.signal = typeof signal === 'number' ? String(signal) : signal
      slot.handle.kill(signal)
      return true
    }
    return false
  }

  abort(taskId: string): void {
    for (const slot of this.slots_.values()) if (slot.job?.job.id === taskId) slot.handle.send({ type: 'abort', id: taskId, reason: 'revoked' })
  }

  async grow(n: number): Promise<void> {
    const from = this.size
    this.size += n
    await Promise.all(Array.from({ length: n }, (_, i) => this.addSlot(from + i + 1)))
  }

  async shrink(n: number): Promise<void> {
    const target = Math.max(1, this.size - n)
    // Highest indexes go first, so the survivors keep 1..target.
    for (let index = this.size; index > target; index--) {
      const slot = this.slots_.get(index)
      if (!slot) continue
      slot.retiring = true
      // A busy slot exits when its task is done (finish() sees the flag), after the hooks it holds.
      if (slot.job) continue
      if (slot.holding) slot.retireWhenReleased = true
      else slot.handle.send({ type: 'exit' })
    }
    this.size = target
  }

  slots(): SlotInfo[] {
    return [...this.slots_.values()]
      .sort((a, b) => a.index - b.index)
      .map((s) => ({ index: s.index, pid: s.handle.pid, taskId: s.job?.job.id ?? null, since: s.job?.since ?? null }))
  }

  processes(): number[] {
    return this.slots().map((s) => s.pid)
  }

  async close({ cold }: { cold: boolean }): Promise<void> {
    this.closing = true
    const exits = [...this.slots_.values()].map(
      (slot) =>
        new Promise<void>((resolve) => {
          slot.handle.onExit(() => resolve())
          if (cold && slot.job) {
            slot.job.killReason = 'terminated'
            slot.handle.kill('SIGKILL')
          } else slot.handle.send({ type: 'exit' })
          setTimeout(() => {
            slot.handle.kill('SIGKILL')
            resolve()
          }, 3000).unref()
        }),
    )
    await Promise.all(exits)
  }
}
