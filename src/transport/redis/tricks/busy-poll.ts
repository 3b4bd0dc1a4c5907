// While a claim is on the wire to a Redis that answers within a fraction of a
// millisecond, the claim loop keeps Node's event loop polling its sockets
// (setImmediate: libuv's poll then waits 0 ms) instead of sleeping in
// epoll_wait: on a VM, an idle vCPU woken for the answer costs more than the
// answer's own round trip (bench/README.md#tricks). It stops SPIN_MS after the
// last claim went out, turns itself off while answers come slower than that
// (a Redis across a network, a busy loop), and runs only where ClaimOverlap
// sees a CPU free. Switch: TSQ_NO_BUSY_POLL.

/** Longest the loop polls after a claim goes out (covers ~90% of answers on loopback). */
const SPIN_MS = 0.3
/** Answers slower than this on average (a moving mean) turn the polling off until they are quick again. */
const MAX_ANSWER_MS = SPIN_MS
/** The moving mean's weight for each new answer. */
const ANSWER_WEIGHT = 1 / 8

export class BusyPoll {
  private until = 0
  private spinning = false
  private outstanding = 0
  private stopped = false
  /** Moving mean of claims' answer times, ms; undefined before the first answer. */
  private answerMs: number | undefined

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly defer: (fn: () => void) => void = (fn) => void setImmediate(fn),
  ) {}

  /** A claim went out: poll until it is answered, for at most SPIN_MS, while answers come back that fast. */
  sent(reply: Promise<unknown>): void {
    const at = this.now()
    this.outstanding += 1
    const answered = (): void => {
      this.outstanding -= 1
      const ms = this.now() - at
      this.answerMs = this.answerMs === undefined ? ms : this.answerMs + (ms - this.answerMs) * ANSWER_WEIGHT
    }
    reply.then(answered, answered)
    if (this.stopped || (this.answerMs !== undefined && this.answerMs > MAX_ANSWER_MS)) return
    this.until = at + SPIN_MS
    if (!this.spinning) {
      this.spinning = true
      this.defer(this.tick)
    }
  }

  /** Whether the loop is being kept awake now (tests). */
  get active(): boolean {
    return this.spinning
  }

  stop(): void {
    this.stopped = true
  }

  private readonly tick = (): void => {
    if (!this.stopped && this.outstanding > 0 && this.now() < this.until) this.defer(this.tick)
    else this.spinning = false
  }
}
