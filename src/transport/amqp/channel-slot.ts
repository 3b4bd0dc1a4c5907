// One channel (or connection) opened on first use and shared by whoever asks
// while it opens: forgotten when its opening fails or it closes, so the next
// ask opens a fresh one. The transport keeps one per role (control, confirmed
// publishes, casts, the publishing connection).
import type { EventEmitter } from 'node:events'

export class ChannelSlot<T extends EventEmitter> {
  private opening: Promise<T> | null = null
  /** The opened one while it is still this slot's: usable without an await. */
  ready: T | null = null

  /** The one being opened or open, else one opened by `open`. */
  get(open: () => Promise<T>): Promise<T> {
    if (!this.opening) {
      const opening: Promise<T> = open().then((it) => {
        it.on('close', () => {
          if (this.opening === opening) this.opening = null
          if (this.ready === it) this.ready = null
        })
        if (this.opening === opening) this.ready = it
        return it
      })
      opening.catch(() => {
        if (this.opening === opening) this.opening = null
      })
      this.opening = opening
    }
    return this.opening
  }

  /** What is being opened or is open, without opening anything. */
  get current(): Promise<T> | null {
    return this.opening
  }

  /** Forgets the current one (its connection is gone): the next ask opens another. */
  reset(): void {
    this.opening = null
    this.ready = null
  }
}
