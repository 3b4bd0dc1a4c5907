// The worker's side of `tsq worker --watch` (supervisor.ts runs it as a
// child). It starts as a spare: Node and tsq loaded, the command line read,
// waiting to be told to load the task module. Told, it records the files the
// module loads, starts as far as it may beside the worker it replaces
// (Worker.startBeforeSwap), says so, and goes on when the supervisor says the
// old worker has stopped. Until then it holds nothing of the broker's, so the
// supervisor may cancel it at any time.
import { ModuleGraph } from './module-graph.js'

/** Set by the supervisor in its child's environment; read once, and not handed on to pool processes. */
export const WATCH_CHILD_ENV = 'TSQ_WATCH_CHILD'

export type ToSupervisor = { type: 'listening' } | { type: 'files'; files: string[] } | { type: 'ready'; preforkSlots: number }
export type FromSupervisor = { type: 'load' } | { type: 'go'; banner: boolean } | { type: 'cancel' }

export class WatchChild {
  private readonly graph = ModuleGraph.track()
  private held = true
  private modulePaths: string[] = []
  private resolveLoad!: () => void
  private readonly load = new Promise<void>((resolve) => (this.resolveLoad = resolve))
  private resolveGo!: (go: { banner: boolean }) => void
  private readonly go = new Promise<{ banner: boolean }>((resolve) => (this.resolveGo = resolve))
  /** What a cancel closes before the process exits (the pool's processes), once there is something. */
  private discard: (() => Promise<void>) | undefined

  /** This process is a --watch supervisor's worker, or null. */
  static fromEnvironment(env: NodeJS.ProcessEnv = process.env): WatchChild | null {
    const value = env[WATCH_CHILD_ENV]
    if (!value || !process.send) return null
    delete env[WATCH_CHILD_ENV]
    return new WatchChild(Number(value) || 0)
  }

  /** @param slotsAhead the prefork slots of the worker this one will replace: as many may be started ahead. */
  private constructor(readonly slotsAhead: number) {
    process.on('message', (message: FromSupervisor) => {
      if (message.type === 'load') this.resolveLoad()
      else if (message.type === 'go') this.resolveGo(message)
      else if (message.type === 'cancel' && this.held) void this.cancel()
    })
    // The supervisor is gone: a held worker has nothing to give back; a running one stops as TERM stops it.
    process.on('disconnect', () => (this.held ? void this.cancel() : process.kill(process.pid, 'SIGTERM')))
    // Until this arrives the supervisor cancels with TERM (nothing has started that would outlive this process).
    void this.send({ type: 'listening' })
  }

  /** Resolves when the supervisor wants the task module loaded (at once for the first worker; a spare waits for a change). */
  loadWhenTold(): Promise<void> {
    return this.load
  }

  /** `discard` closes what a cancel must not leave behind. */
  onCancel(discard: () => Promise<void>): void {
    this.discard = discard
  }

  /** The -A and -I paths, watched whatever the loader saw of them. */
  loaded(paths: readonly string[]): void {
    this.modulePaths = [...paths]
  }

  /** Started as far as it may beside the old worker (with a prefork pool of `preforkSlots`, or 0): waits for the supervisor's go. */
  async ready(preforkSlots: number): Promise<{ banner: boolean }> {
    await this.sendFiles()
    await this.send({ type: 'ready', preforkSlots })
    const go = await this.go
    this.held = false
    // The channel no longer keeps the process alive: the worker's own stop ends it.
    process.channel?.unref()
    return go
  }

  /**
   * The module did not load, or the worker could not start: the supervisor
   * learns which files to wait for, and the process ends with its error.
   */
  async failed(): Promise<void> {
    await this.sendFiles()
    process.channel?.unref()
  }

  /** The files loaded so far, for the supervisor to watch. */
  private sendFiles(): Promise<void> {
    return this.send({ type: 'files', files: this.graph.files(this.modulePaths) })
  }

  private async cancel(): Promise<void> {
    await this.discard?.().catch(() => undefined)
    process.exit(0)
  }

  private send(message: ToSupervisor): Promise<void> {
    return new Promise((resolve) => {
      if (!process.connected) return resolve()
      process.send!(message, undefined, {}, () => resolve())
    })
  }
}
