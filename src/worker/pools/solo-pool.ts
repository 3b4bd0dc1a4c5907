// The solo pool runs tasks on the worker's own event loop: -c async tasks at
// once, no isolation, and no way to kill a task that does not cooperate.
import {
  type App,
  announceProcessInit,
  type StateSink,
  executeJob,
  type RunningJob,
  type Job,
  type Outcome,
  setLongTimeout,
  type LongTimeout,
} from '../../app/index.js'
import type { Pool, SlotInfo } from './pool.js'
import { mainThreadTask } from '../../process/health/index.js'

export class SoloPool implements Pool {
  readonly kind = 'solo' as const
  private readonly running = new Map<string, { job: RunningJob; since: number; settle: (o: Outcome) => void }>()
  /** Ended tasks whose end hooks wait for the worker to store their results. */
  private readonly holding = new Map<string, RunningJob>()

  constructor(
    private readonly app: App,
    public size: number,
    private readonly hostname = 'celery',
    private readonly log?: (message: string) => void,
  ) {}

  /** Celery's solo pool sends worker_process_init too: its one process is the worker's. */
  async start(): Promise<void> {
    await announceProcessInit(this.app.signals, this.app.options.conf, { sender: this.hostname, pid: process.pid, index: 0 }, (message) =>
      this.log?.(message),
    )
  }

  run(job: Job, timeLimit: number | null, sink?: StateSink): Outcome | Promise<Outcome> {
    // Marked for --health-port: a task holding the main loop is work, not a stuck process.
    const leave = mainThreadTask(timeLimit)
    const running = executeJob(this.app, job, sink, { holdEndHooks: true })
    // Ended within the call: nothing left to time, abort or wait for.
    if (running.immediate) {
      leave()
      if (running.immediate.endHooks) this.holding.set(job.id, running)
      return running.immediate
    }
    return new Promise<Outcome>((resolve) => {
      let timer: LongTimeout | undefined
      const settle = (outcome: Outcome) => {
        if (!this.running.has(job.id)) return
        this.running.delete(job.id)
        timer?.clear()
        leave()
        resolve(outcome)
      }
      this.running.set(job.id, { job: running, since: Date.now(), settle })
      // A hard limit on the event loop can only abandon the task, not stop it.
      if (timeLimit && timeLimit > 0) {
        timer = setLongTimeout(() => {
          running.abort('soft-time-limit')
          settle({ status: 'killed', reason: 'time-limit', signal: null, runtime: timeLimit })
        }, timeLimit * 1000)
      }
      void running.outcome.then((outcome) => {
        // A task already timed out or terminated has had its outcome; its late hooks are dropped.
        if (outcome.endHooks && this.running.has(job.id)) this.holding.set(job.id, running)
        settle(outcome)
      })
    })
  }

  afterStored(taskId: string): void {
    const held = this.holding.get(taskId)
    if (!held) return
    this.holding.delete(taskId)
    held.releaseEndHooks()
  }

  terminate(taskId: string): boolean {
    const entry = this.running.get(taskId)
    if (!entry) return false
    entry.job.abort('revoked')
    entry.settle({ status: 'killed', reason: 'terminated', signal: null, runtime: (Date.now() - entry.since) / 1000 })
    return true
  }

  abort(taskId: string): void {
    this.running.get(taskId)?.job.abort('revoked')
  }

  async grow(n: number): Promise<void> {
    this.size += n
  }

  async shrink(n: number): Promise<void> {
    this.size = Math.max(1, this.size - n)
  }

  slots(): SlotInfo[] {
    return [...this.running.entries()].map(([id, e], i) => ({ index: i + 1, pid: process.pid, taskId: id, since: e.since }))
  }

  async close({ cold }: { cold: boolean }): Promise<void> {
    if (cold) for (const id of [...this.running.keys()]) this.terminate(id)
  }
}
