// A child started in its own process group (detached), as the interop tests
// start workers: its output kept (the tail), its exit awaited, and the whole
// group killed at the end so pool children never outlive a test.
import type { ChildProcess } from 'node:child_process'

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

export class GroupProcess {
  private output = ''
  private exitedFlag = false
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string | null>

  constructor(
    protected readonly child: ChildProcess,
    private readonly keepLog = 200_000,
  ) {
    const append = (d: string) => {
      // Bounded, because an INFO-level worker logs every task for the whole run.
      this.output = (this.output + d).slice(-this.keepLog)
    }
    child.stdout?.setEncoding('utf8').on('data', append)
    child.stderr?.setEncoding('utf8').on('data', append)
    this.exited = new Promise((r) => {
      child.once('exit', (code, signal) => {
        this.exitedFlag = true
        r(code ?? signal)
      })
    })
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error('process has no pid')
    return this.child.pid
  }

  get hasExited(): boolean {
    return this.exitedFlag
  }

  /** The output so far, for failure messages. */
  get log(): string {
    return this.output
  }

  logTail(chars = 4000): string {
    return this.output.slice(-chars)
  }

  /** The process leads its own group, so this reaches its children even after it died. */
  protected signalGroup(sig: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, sig)
    } catch {
      /* already gone */
    }
  }

  /** `first` (to the group or the main process only), KILL to the group after the bound, and KILL again at the end. Idempotent. */
  async stopWith(first: () => void, graceMs: number): Promise<void> {
    if (!this.exitedFlag) {
      first()
      const done = await Promise.race([this.exited.then(() => true), sleep(graceMs).then(() => false)])
      if (!done) {
        this.signalGroup('SIGKILL')
        await Promise.race([this.exited, sleep(5_000)])
      }
    }
    this.signalGroup('SIGKILL')
  }
}
