// `tsq worker --watch`: a development mode that runs the real worker as a
// child and replaces it when its task module, or a local file that module
// imports, changes.
//
// Why a supervisor and not a pool restart: the worker's main process holds
// the app too (task options, routes, rate limits), and the solo pool runs
// tasks in it; ES modules cannot be unloaded, so only a new process runs new
// code under every pool. Nothing held is lost: the old worker stops warm
// (running tasks finish and are acknowledged; what it had prefetched, reserved
// or held for an ETA goes back to the broker unacknowledged), and the new one
// consumes only after it has stopped, so no message is ever in two workers.
//
// The new worker is started before the old one stops, as far as it may beside
// it (watch-child.ts: the module loaded, the connection open, the pool's
// processes up with the module loaded in them), so the swap costs little more
// than the old worker's drain; and its process was started ahead, as a spare
// waiting for a change, so Node and tsq are loaded already. A module that
// fails to load never replaces anything: its error is printed, the old worker
// goes on with the code it loaded, and the next change tries again.
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync, watch as watchDir, type FSWatcher } from 'node:fs'
import { dirname, isAbsolute, join, relative } from 'node:path'
import { WATCH_CHILD_ENV, type FromSupervisor, type ToSupervisor } from './watch-child.js'

/** Quiet time after a file event before the reload starts: an editor's save (or a burst of them) is one reload. */
export const WATCH_DEBOUNCE_MS = 100

export interface SuperviseOptions {
  /** `tsq worker`'s arguments, without --watch. */
  args: readonly string[]
  /** Where the `[watch]` lines go. */
  say?: (line: string) => void
  debounceMs?: number
}

interface Child {
  readonly proc: ChildProcess
  files: string[]
  /** It reads the supervisor's messages (watch-child.ts is set up). */
  listening: boolean
  /** Told to load the task module (a spare waits until then). */
  loading: boolean
  /** Its prefork pool's size once ready (0: another pool): a spare starts as many slot processes ahead. */
  preforkSlots: number
  ready: boolean
  cancelled: boolean
  exitCode: number | null
  readonly exited: Promise<number>
}

/** `--watch` and `--workdir` (the supervisor has already moved there) leave the child's command line. */
export function childArgs(args: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '--watch' || arg.startsWith('--workdir=')) continue
    if (arg === '--workdir') {
      i++
      continue
    }
    out.push(arg)
  }
  return out
}

function contentHash(path: string): string | null {
  try {
    return createHash('sha1').update(readFileSync(path)).digest('hex')
  } catch {
    return null
  }
}

/** A path as the log names it: relative to the working directory when under it. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path)
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path
}

/** Resolves with the exit code once a signal has stopped the worker (and the supervisor with it). */
export function superviseWorker(o: SuperviseOptions): Promise<number> {
  return new Supervisor(o).run()
}

class Supervisor {
  private readonly say: (line: string) => void
  private readonly debounceMs: number
  /** The worker consuming now. */
  private current: Child | null = null
  /** Workers told to stop (warm) for a reload, until they exit. */
  private readonly retiring = new Set<Child>()
  /** The next worker, loading or ready and waiting for `retiring` to empty. */
  private standby: Child | null = null
  /** A worker process started ahead, waiting to be told to load: a reload does not wait for Node and tsq to start. */
  private spare: Child | null = null
  /** Standbys and spares told to go, until they exit. */
  private readonly cancelled = new Set<Child>()
  /** Every file watched, with its content's hash as the latest worker started loaded it. */
  private readonly known = new Map<string, string | null>()
  private readonly watchers = new Map<string, FSWatcher>()
  private readonly touched = new Set<string>()
  private debounce: NodeJS.Timeout | undefined
  private bannerShown = false
  private stopping = false
  private signalsSeen = 0
  private lastExitCode = 0
  private resolveDone!: (code: number) => void
  private readonly done = new Promise<number>((resolve) => (this.resolveDone = resolve))

  constructor(private readonly o: SuperviseOptions) {
    this.say = o.say ?? ((line) => process.stderr.write(`${line}\n`))
    this.debounceMs = o.debounceMs ?? WATCH_DEBOUNCE_MS
  }

  run(): Promise<number> {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGQUIT'] as const) process.on(signal, () => this.onStopSignal(signal))
    // The worker's own signals for a dump of its slots and the inspector.
    for (const signal of ['SIGUSR1', 'SIGUSR2'] as const) process.on(signal, () => this.current?.proc.kill(signal))
    this.standby = this.spawnWorker()
    this.load(this.standby)
    return this.done
  }

  /** What the files hold now is what `child` loads: a change is measured against it. */
  private load(child: Child): void {
    for (const path of this.known.keys()) this.known.set(path, contentHash(path))
    child.loading = true
    if (child.listening) this.send(child, { type: 'load' })
  }

  private spawnSpare(): void {
    if (!this.spare && !this.stopping) this.spare = this.spawnWorker(this.current?.preforkSlots ?? 0)
  }

  private spawnWorker(slotsAhead = 0): Child {
    // Its own process group, so a Ctrl-C at the terminal reaches the worker once, through the supervisor.
    const proc = spawn(process.execPath, [...process.execArgv, process.argv[1]!, 'worker', ...childArgs(this.o.args)], {
      detached: true,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, [WATCH_CHILD_ENV]: String(slotsAhead) },
    })
    let resolveExit!: (code: number) => void
    const child: Child = {
      proc,
      files: [],
      listening: false,
      loading: false,
      preforkSlots: 0,
      ready: false,
      cancelled: false,
      exitCode: null,
      exited: new Promise((resolve) => (resolveExit = resolve)),
    }
    proc.on('message', (message: ToSupervisor) => {
      if (message.type === 'listening') {
        child.listening = true
        if (child.loading) this.send(child, { type: 'load' })
      } else if (message.type === 'files') {
        child.files = message.files
        if (child === this.standby) this.watchFiles(message.files)
      } else if (message.type === 'ready') {
        child.ready = true
        child.preforkSlots = message.preforkSlots
        this.swap()
      }
    })
    proc.on('error', (error) => this.say(`[watch] cannot start the worker: ${error.message}`))
    proc.once('exit', (code, signal) => {
      child.exitCode = code ?? (signal ? 128 : 1)
      resolveExit(child.exitCode)
      this.onExit(child)
    })
    return child
  }

  /** The standby is ready: the current worker stops warm, and the standby goes on once it has exited. */
  private swap(): void {
    const next = this.standby
    if (!next?.ready || this.stopping) return
    if (this.current) {
      const old = this.current
      this.current = null
      this.retiring.add(old)
      old.proc.kill('SIGTERM')
    }
    if (this.retiring.size > 0) return
    this.standby = null
    this.current = next
    this.send(next, { type: 'go', banner: !this.bannerShown })
    this.bannerShown = true
    // What the running worker loaded is what is watched from now on.
    this.watchFiles(next.files, true)
    this.spawnSpare()
  }

  private onExit(child: Child): void {
    if (this.retiring.delete(child)) {
      this.swap()
    } else if (child === this.spare) {
      this.spare = null
    } else if (child === this.standby) {
      this.standby = null
      if (!child.cancelled && !this.stopping) {
        this.say(
          this.current || this.retiring.size > 0
            ? '[watch] the new code failed to load (its error is above): the worker goes on with the code it loaded; waiting for the next change'
            : '[watch] the worker failed to start (its error is above); waiting for a change',
        )
        this.spawnSpare()
      }
    } else if (child === this.current) {
      this.current = null
      this.lastExitCode = child.exitCode ?? 0
      if (!this.stopping) this.say(`[watch] the worker exited (code ${child.exitCode}); waiting for a change to start it again`)
    }
    if (this.stopping) this.finishIfStopped()
  }

  /**
   * Watches `files` (their folders: an editor that saves by renaming a new
   * file over the old one is seen too). `replace`: the running worker's files
   * become the whole set; otherwise they are added to it.
   */
  private watchFiles(files: readonly string[], replace = false): void {
    if (this.stopping) return
    const wanted = new Set(files)
    if (replace) for (const path of this.known.keys()) if (!wanted.has(path)) this.known.delete(path)
    for (const path of wanted) if (!this.known.has(path)) this.known.set(path, contentHash(path))
    const dirs = new Set([...this.known.keys()].map((path) => dirname(path)))
    for (const [dir, watcher] of this.watchers) {
      if (dirs.has(dir)) continue
      watcher.close()
      this.watchers.delete(dir)
    }
    for (const dir of dirs) {
      if (this.watchers.has(dir)) continue
      try {
        const watcher = watchDir(dir, (_event, name) => {
          const path = name ? join(dir, name.toString()) : undefined
          if (path && this.known.has(path)) this.onTouched(path)
        })
        watcher.on('error', () => {
          watcher.close()
          this.watchers.delete(dir)
        })
        this.watchers.set(dir, watcher)
      } catch (error) {
        this.say(`[watch] cannot watch ${shown(dir)}: ${(error as Error).message}`)
      }
    }
  }

  private onTouched(path: string): void {
    if (this.stopping) return
    this.touched.add(path)
    clearTimeout(this.debounce)
    this.debounce = setTimeout(() => this.reloadIfChanged(), this.debounceMs)
  }

  /** A file whose content is not what the latest worker loaded: that worker is replaced by a new one. */
  private reloadIfChanged(): void {
    const changed = [...this.touched].filter((path) => contentHash(path) !== this.known.get(path))
    this.touched.clear()
    if (changed.length === 0 || this.stopping) return
    this.say(`[watch] reloading: ${changed.map(shown).join(', ')} changed`)
    // A standby still loading (or waiting) has the code from before this change.
    if (this.standby) this.cancel(this.standby)
    this.standby = this.spare ?? this.spawnWorker()
    this.spare = null
    this.load(this.standby)
  }

  /**
   * A standby holds nothing of the broker's yet: it closes its pool and exits.
   * One not listening yet has started nothing that would outlive it, and TERM ends it.
   */
  private cancel(child: Child): void {
    child.cancelled = true
    this.cancelled.add(child)
    void child.exited.then(() => {
      this.cancelled.delete(child)
      if (this.stopping) this.finishIfStopped()
    })
    if (child.listening) this.send(child, { type: 'cancel' })
    else child.proc.kill('SIGTERM')
  }

  private send(child: Child, message: FromSupervisor): void {
    if (child.proc.connected) child.proc.send(message, (error) => void error)
  }

  /**
   * INT, TERM, QUIT: no more reloads; the signal goes to the worker, which
   * stops as it would without --watch (a second Ctrl-C goes cold). A worker
   * already stopping for a reload hears only the signals after the first.
   */
  private onStopSignal(signal: NodeJS.Signals): void {
    this.signalsSeen += 1
    if (!this.stopping) {
      this.stopping = true
      clearTimeout(this.debounce)
      for (const watcher of this.watchers.values()) watcher.close()
      this.watchers.clear()
      for (const child of [this.standby, this.spare]) if (child) this.cancel(child)
      this.standby = this.spare = null
    }
    this.current?.proc.kill(signal)
    if (this.signalsSeen > 1) for (const old of this.retiring) old.proc.kill(signal)
    this.finishIfStopped()
  }

  private finishIfStopped(): void {
    if (this.current || this.retiring.size > 0 || this.cancelled.size > 0) return
    this.resolveDone(this.lastExitCode)
  }
}
