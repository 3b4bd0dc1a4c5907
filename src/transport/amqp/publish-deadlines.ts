// Publishes given a timeout, until their confirm or their deadline: one timer
// for all of them, armed for the earliest deadline, none per message. Past its
// deadline a send fails, saying whether its frames left (the message may
// still be delivered) or not (it never will be).
import { PublishTimeoutError } from '../errors.js'

/** A publish given a timeout, until its confirm or its deadline. */
export interface TimedSend {
  deadline: number
  timeoutMs: number
  what: string
  /** Its frames were handed to a connection: it may reach the broker whatever happens next. */
  written: boolean
  done: boolean
  fail: (err: Error) => void
}

export class PublishDeadlines {
  /** Oldest first; settled ones are dropped when the timer next fires. */
  private sends: TimedSend[] = []
  private timer: NodeJS.Timeout | null = null
  private armedFor = Infinity

  /** `blockedReason`: the broker's reason while it blocks publishing, said in the timeout's message. */
  constructor(private readonly blockedReason: () => string | null) {}

  track(send: TimedSend): void {
    this.sends.push(send)
    // A shorter timeout than the pending ones' re-arms the timer for its earlier deadline.
    if (!this.timer || send.deadline < this.armedFor) {
      if (this.timer) clearTimeout(this.timer)
      this.arm()
    }
  }

  /** Fails the sends past their deadline, drops the settled, and waits for the next deadline. */
  private arm(): void {
    this.timer = null
    const now = Date.now()
    let next = Infinity
    const pending: TimedSend[] = []
    for (const send of this.sends) {
      if (send.done) continue
      if (send.deadline <= now) {
        send.done = true
        send.fail(this.timeoutError(send))
        continue
      }
      pending.push(send)
      next = Math.min(next, send.deadline)
    }
    this.sends = pending
    this.armedFor = next
    if (pending.length > 0) this.timer = setTimeout(() => this.arm(), next - now)
  }

  timeoutError(send: TimedSend): PublishTimeoutError {
    const seconds = `${+(send.timeoutMs / 1000).toFixed(3)} s`
    const reason = this.blockedReason()
    const blocked = reason !== null ? `: the broker blocks publishing (${reason})` : ''
    return send.written
      ? new PublishTimeoutError(
          `${send.what} not confirmed within ${seconds}${blocked}; the message may still be delivered, so sending it again may run the task twice`,
          true,
        )
      : new PublishTimeoutError(
          `${send.what} not sent within ${seconds}${blocked || ' (no connection to the broker)'}; the message was not sent`,
          false,
        )
  }

  /** The transport closed: every pending send fails now, a written one saying it may still be delivered. */
  failAll(closedError: () => Error): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    for (const send of this.sends.splice(0)) {
      if (send.done) continue
      send.done = true
      send.fail(
        send.written
          ? new PublishTimeoutError(
              `${send.what}: the transport closed before the broker confirmed it; the message may still be delivered`,
              true,
            )
          : closedError(),
      )
    }
  }
}
