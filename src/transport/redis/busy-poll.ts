// While a claim is on the wire to a Redis that answers within a fraction of a
// millisecond, the claim loop keeps Node's event loop polling its sockets
// (setImmediate: libuv's poll then waits 0 ms) instead of letting it sleep in
// epoll_wait until the answer wakes it.
//
// Why: at the solo pool's default window (8, two claims of 4 on the wire), the
// worker and Redis hand each claim back and forth every ~80 us. Each time the
// worker slept for an answer, its CPU went idle, and on the 2-core VM the
// benches run on, a CPU that idles and is woken again costs tens of
// microseconds before the answer is read (most likely because the hypervisor
// parks an idle vCPU).
// Per 1,000 tasks the worker spent 18-21 ms of CPU over 20-28 ms of wall time:
// waiting, not working, for a fifth of each drain. Polling while the answer is
// due (round trips here: 60-100 us median, 250 us at the 90th percentile),
// interleaved 30,000-task bursts drained at 48-54k tasks/s against 30-43k, at
// less worker CPU per task (18-21 us against 19-26), since a poll that finds
// the answer costs less than a sleep and a wake-up (bench/README.md).
//
// What it costs, and where it stops:
// - it runs only while a claim is unanswered, and never longer than SPIN_MS
//   after the last claim went out: an idle worker, or one whose queue ran
//   empty, sleeps as before;
// - answers slower than the budget (a Redis across a network, or a worker
//   whose tasks keep its loop busy) turn it off, so no CPU is spent on a wait
//   that polling cannot shorten;
// - the claim loop asks for it only where ClaimOverlap sees a CPU free (the
//   solo pool, the main thread rarely kept waiting for a CPU): on a busy
//   machine the polling would take CPU time from Redis itself.

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
