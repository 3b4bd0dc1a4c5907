// Wakes a consumer when its ready/ folder changes. fs.watch (inotify) gives
// prompt delivery; it can miss events (and dies with the folder), so a polling
// timer runs beside it as the safety net.
import { type FSWatcher, watch } from 'node:fs'

export const POLL_MS = 250
const REWATCH_TICKS = 20

export class ReadyWatcher {
  private watcher: FSWatcher | undefined
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly dir: string,
    private readonly wake: () => void,
    private readonly pollMs = POLL_MS,
  ) {}

  start(): void {
    this.tryWatch()
    // Ref'd on purpose: like an AMQP socket with a consumer, an active consumer keeps the process alive.
    let ticks = 0
    this.timer = setInterval(() => {
      // A deleted and re-declared queue has a new folder; the old watch would stay silent.
      ticks = (ticks + 1) % REWATCH_TICKS
      if (!this.watcher || ticks === 0) this.tryWatch()
      this.wake()
    }, this.pollMs)
  }

  private tryWatch(): void {
    this.watcher?.close()
    this.watcher = undefined
    try {
      const w = watch(this.dir, { persistent: false }, () => this.wake())
      w.on('error', () => {
        w.close()
        if (this.watcher === w) this.watcher = undefined
      })
      this.watcher = w
    } catch {
      this.watcher = undefined
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    this.watcher?.close()
    this.watcher = undefined
  }
}
