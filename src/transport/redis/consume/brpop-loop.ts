// One BRPOP at a time over every ready queue, on a connection of its own so that
// a 1 s block never stalls publishes or acks (kombu's MultiChannelPoller, BullMQ's
// blocking connection). When the set of ready queues changes mid-block, CLIENT
// UNBLOCK ends the wait early instead of letting a new consumer sit for 1 s.
import type { Redis } from 'ioredis'
import { closeConnection } from '../connections.js'
import type { RedisKeys } from '../keys.js'
import type { BusyPoll } from '../tricks/busy-poll.js'
import type { ClaimOverlap } from '../tricks/claim-overlap.js'
import type { ClaimedMessage } from './unacked.js'

export interface BrpopTarget {
  /** Queues to wait on now, in cycle order; empty means wait for a nudge. */
  readyQueues(): string[]
  /** A message was popped from list `key` of `queue`. */
  deliver(queue: string, key: string, raw: string): void | Promise<void>
  /** A BRPOP came back empty. */
  idle(): void
  /** The BRPOP failed (typically the connection dropped). */
  failed(error: unknown): void
  /** Queues with acking consumers are claimed atomically (pop + unacked) instead of BRPOPped. */
  wantsClaim(queues: string[]): boolean
  /** The messages `queues`' consumers can take now, and their whole window (Infinity: no limit). */
  claimRoom(queues: string[]): { room: number; window: number }
  /** Pops and records in one step, at most `max`; empty when every list is empty. */
  claim(keys: string[], queues: string[], max: number): Promise<ClaimedMessage[]>
  /** A claimed message: already in `unacked` under `recordedAs` when recorded. A promise only when it must be waited for. */
  deliverClaimed(queue: string, key: string, raw: string, recordedAs: string | undefined): void | Promise<void>
  /** Records what a BLMOVE moved from `source` into the loop's staging list for it. */
  claimStaged(source: string): Promise<{ raw: string; recordedAs: string | undefined } | null>
  /** The staging list this loop moves messages of `source` into. */
  stagingFor(source: string): string
  /** Another blocking connection, so that an idle claim can wait on each queue at once. */
  openBlocker(): Promise<Redis>
}

/** A claim on the wire: how many it asked for (held against the window until it answers). */
interface ClaimInFlight {
  asked: number
  reply: Promise<ClaimedMessage[]>
}

/**
 * Most messages one claim takes. The cap keeps one script run short (each
 * message is JSON-decoded in Lua to find its delivery tag).
 */
const CLAIM_BATCH_MAX = 32

/**
 * Claims on the wire at once. With a window larger than one claim, the next
 * claim goes out while the last one's messages are still running, for the
 * room they leave, so the worker does not sit through a round trip after each
 * batch of 32.
 */
const MAX_CLAIMS_IN_FLIGHT = 4

/** A connection that parks in blocking commands, and its CLIENT ID for CLIENT UNBLOCK. */
class Blocker {
  clientId: number | undefined
  blocked = false
  private readonly onReady = (): void => {
    this.clientId = undefined
    // Sent from the 'ready' listener, so it goes out before anything queued offline.
    this.conn.client('ID').then(
      (id) => {
        this.clientId = Number(id)
      },
      () => undefined,
    )
    this.readied()
  }

  constructor(
    readonly conn: Redis,
    private readonly readied: () => void = () => undefined,
  ) {
    conn.on('ready', this.onReady)
    if (conn.status === 'ready') this.onReady()
  }

  unblock(control: Redis): Promise<void> {
    if (!this.blocked || this.clientId === undefined) return Promise.resolve()
    // Unblocking makes BRPOP/BLMOVE return nil, as a timeout would: nothing can be lost.
    return control.client('UNBLOCK', this.clientId).then(
      () => undefined,
      () => undefined,
    )
  }

  detach(): void {
    this.conn.off('ready', this.onReady)
  }
}

interface IdleWait {
  source: string
  moved: string | null
  error?: unknown
}

/**
 * While idle, the loop blocks on each ready queue's list, one connection per
 * queue (BLMOVE into its staging list takes a single source, and so that it
 * waits in line with Celery's own BRPOP consumers on every queue, not only
 * the first), and polls every list, including priority sub-lists, at least
 * this often.
 */
const CLAIM_BLOCK_SECONDS = 0.2

const BRPOP_TIMEOUT_SECONDS = 1

/** How long after a failed attempt the loop waits before opening another blocking connection. */
const OPEN_RETRY_MS = 5000

export class BrpopLoop {
  private stopping = false
  /** Sources whose staging list may hold a message whose claim did not complete. */
  private readonly unstaged = new Set<string>()
  private running: Promise<void> | undefined
  private wake: (() => void) | undefined
  private blockedOn: string | undefined
  /** The loop's own connection first, then the extra ones idle waits add. */
  private readonly blockers: Blocker[]
  private opening: Promise<void> | undefined
  private openFailedAt = -Infinity
  /** Claims sent and not yet answered, oldest first. */
  private readonly inflight: ClaimInFlight[] = []
  /** Messages the claims in flight may bring. */
  private reserved = 0
  /** Messages claimed and not yet handed to a consumer. */
  private undelivered = 0
  /** The last claim found every list empty: the next wait blocks instead of claiming again. */
  private drained = false
  /** What listsOf answered last. */
  private lastLists: { queues: readonly string[]; lists: string[] } | undefined

  constructor(
    private readonly conn: Redis,
    private readonly control: Redis,
    private readonly target: BrpopTarget,
    private readonly keys: RedisKeys,
    /** Whether a CPU is free now: a small window may then go out as two claims at once, and the loop may poll; none: never. */
    private readonly overlap?: ClaimOverlap,
    /** Keeps the event loop polling while a claim's answer is due, where a CPU is free (overlap says). */
    private readonly poll?: BusyPoll,
    /** Whether a free CPU splits a small window (TSQ_NO_CLAIM_OVERLAP: no, though `poll` may still use `overlap`). */
    private readonly splitClaims = true,
  ) {
    this.blockers = [new Blocker(conn, () => this.wake?.())]
  }

  start(): void {
    this.running ??= this.run()
  }

  /** Something changed (consumer added, cancelled, room freed): re-evaluate the queues. */
  nudge(): void {
    if (this.wake) {
      this.wake()
      return
    }
    if (this.blockedOn === undefined) return
    if (this.target.readyQueues().join('\n') === this.blockedOn) return
    void this.unblockAll()
  }

  private async unblockAll(): Promise<void> {
    await Promise.all(this.blockers.map((b) => b.unblock(this.control)))
  }

  async stop(): Promise<void> {
    this.stopping = true
    this.poll?.stop()
    this.nudge()
    await this.unblockAll()
    let timer: NodeJS.Timeout | undefined
    const settled = await Promise.race([
      (this.running ?? Promise.resolve()).then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), (BRPOP_TIMEOUT_SECONDS + 1) * 1000)
      }),
    ])
    clearTimeout(timer)
    // A BRPOP parked while the broker is unreachable would wait forever: drop it.
    if (!settled) {
      for (const b of this.blockers) b.conn.disconnect()
      await this.running
    }
    for (const b of this.blockers) b.detach()
    // The loop's own connection is the transport's to close; the extra ones are the loop's.
    await Promise.all(this.blockers.slice(1).map((b) => closeConnection(b.conn)))
  }

  /** One blocker per source, opening extra connections as needed; fewer if one cannot be opened now. */
  private async blockersFor(count: number): Promise<Blocker[]> {
    // A refused connection (maxclients, say) is not retried on every 0.2 s round.
    while (this.blockers.length < count && !this.stopping && Date.now() - this.openFailedAt >= OPEN_RETRY_MS) {
      this.opening ??= this.target
        .openBlocker()
        .then(
          (conn) => {
            this.blockers.push(new Blocker(conn))
          },
          (error: unknown) => {
            this.openFailedAt = Date.now()
            this.target.failed(error)
          },
        )
        .finally(() => {
          this.opening = undefined
        })
      const before = this.blockers.length
      await this.opening
      if (this.blockers.length === before) break
    }
    return this.blockers.slice(0, count)
  }

  /**
   * BLMOVE on each source at once; the first that brings a message ends the
   * others' waits, each of which may have moved one too (all are handled).
   */
  private async waitOnEach(sources: readonly string[]): Promise<IdleWait[]> {
    const blockers = await this.blockersFor(sources.length)
    return Promise.all(
      blockers.map(async (b, i): Promise<IdleWait> => {
        const source = sources[i]!
        b.blocked = true
        try {
          const moved = await b.conn.blmove(source, this.target.stagingFor(source), 'RIGHT', 'LEFT', CLAIM_BLOCK_SECONDS)
          b.blocked = false
          if (moved !== null) void this.unblockAll()
          return { source, moved }
        } catch (error) {
          b.blocked = false
          return { source, moved: null, error }
        }
      }),
    )
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        if (this.wake === done) this.wake = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wake = done
    })
  }

  private async run(): Promise<void> {
    let failures = 0
    while (!this.stopping) {
      if (this.conn.status !== 'ready') {
        await this.sleep(200)
        continue
      }
      const queues = this.target.readyQueues()
      if (queues.length === 0 && this.inflight.length === 0) {
        await this.sleep(1000)
        continue
      }
      if (this.inflight.length > 0 || (this.target.wantsClaim(queues) && !this.drained)) {
        this.topUp()
        const next = this.inflight.shift()
        if (!next) {
          await this.sleep(1000)
          continue
        }
        let claimed: ClaimedMessage[]
        try {
          claimed = await next.reply
          failures = 0
        } catch (error) {
          this.reserved -= next.asked
          if (this.stopping) break
          this.target.failed(error)
          failures += 1
          await this.sleep(Math.min(100 * failures, 1000))
          continue
        }
        this.reserved -= next.asked
        // Claims still out were sent before this answer: the wait blocks once they are in.
        this.drained = claimed.length === 0
        await this.handOver(claimed)
        continue
      }
      if (this.target.wantsClaim(queues)) {
        this.drained = false
        // Each queue's first list (priority 0 by default, where most messages are); its sub-lists are polled by the claim.
        this.blockedOn = queues.join('\n')
        const waits = await this.waitOnEach(queues.map((q) => this.keys.list(q, this.keys.steps[0] ?? 0)))
        this.blockedOn = undefined
        let failed = false
        let moved = false
        for (const wait of waits) {
          if (wait.error !== undefined) {
            // The reply may have been lost after the move: take whatever is staged next time round.
            this.unstaged.add(wait.source)
            if (!this.stopping) this.target.failed(wait.error)
            failed = true
            continue
          }
          if (wait.moved === null && !this.unstaged.has(wait.source)) continue
          moved = true
          this.unstaged.delete(wait.source)
          let staged: Awaited<ReturnType<BrpopTarget['claimStaged']>>
          try {
            staged = await this.target.claimStaged(wait.source)
          } catch (error) {
            this.unstaged.add(wait.source)
            this.target.failed(error)
            continue
          }
          if (staged) await this.target.deliverClaimed(this.keys.queueOfList(wait.source), wait.source, staged.raw, staged.recordedAs)
        }
        if (this.stopping) break
        if (failed) {
          failures += 1
          await this.sleep(Math.min(100 * failures, 1000))
        } else if (!moved) {
          this.target.idle()
        }
        continue
      }
      let popped: [string, string] | null
      this.blockedOn = queues.join('\n')
      const own = this.blockers[0]!
      own.blocked = true
      try {
        popped = await this.conn.brpop(...this.keys.brpopKeys(queues), BRPOP_TIMEOUT_SECONDS)
        failures = 0
      } catch (error) {
        own.blocked = false
        this.blockedOn = undefined
        if (this.stopping) break
        this.target.failed(error)
        failures += 1
        await this.sleep(Math.min(100 * failures, 1000))
        continue
      }
      own.blocked = false
      this.blockedOn = undefined
      if (!popped) {
        this.target.idle()
        continue
      }
      const [key, raw] = popped
      await this.target.deliver(this.keys.queueOfList(key), key, raw)
    }
    // What the claims still out took is handed over (or, the transport closing, put back) before the loop ends.
    while (this.inflight.length > 0) {
      const next = this.inflight.shift()!
      this.reserved -= next.asked
      await this.handOver(await next.reply.catch(() => []))
    }
  }

  /** Delivers claimed messages one by one, sending the next claim as soon as they leave room for one. */
  private async handOver(claimed: ClaimedMessage[]): Promise<void> {
    this.undelivered += claimed.length
    for (const one of claimed) {
      // Counted against the window by the consumer from here (its delivery is held synchronously).
      this.undelivered -= 1
      const handing = this.target.deliverClaimed(this.keys.queueOfList(one.key), one.key, one.raw, one.recordedAs)
      if (handing) await handing
      this.topUp()
    }
  }

  /** The lists a claim over `queues` pops, in BRPOP order; the same queues as last time reuse the last answer. */
  private listsOf(queues: readonly string[]): string[] {
    const last = this.lastLists
    if (last && last.queues.length === queues.length && last.queues.every((q, i) => q === queues[i])) return last.lists
    const lists = this.keys.brpopKeys(queues)
    this.lastLists = { queues: [...queues], lists }
    return lists
  }

  /**
   * Sends claims for the room the consumers have and no claim has asked for
   * yet. With a claim already out, only for a full batch: tasks ending one by
   * one then do not each send a claim of one. A batch is the whole window up
   * to CLAIM_BATCH_MAX; a window smaller than two batches is split in two
   * while a CPU is free for Redis to run one claim as the worker reads the
   * other (ClaimOverlap): on a busy machine one claim at a time is faster.
   */
  private topUp(): void {
    while (this.inflight.length < MAX_CLAIMS_IN_FLIGHT && !this.stopping && !this.drained) {
      const queues = this.target.readyQueues()
      if (queues.length === 0 || !this.target.wantsClaim(queues)) return
      const { room, window } = this.target.claimRoom(queues)
      const free = room - this.reserved - this.undelivered
      const cpuFree = this.overlap?.split() === true
      // A window of two batches or more already keeps claims overlapping.
      const split = cpuFree && this.splitClaims && window >= 2 && window < 2 * CLAIM_BATCH_MAX
      const batch = Math.min(CLAIM_BATCH_MAX, split ? Math.ceil(window / 2) : window)
      // Mid-batch (messages still to hand over) counts as a claim out: the batch's end claims the rest.
      // Split, the second claim is the window's other half, one smaller when the window is odd.
      const worth = this.inflight.length === 0 && this.undelivered === 0 ? 1 : Math.max(1, split ? window - batch : batch)
      if (free < worth) return
      const asked = Math.min(free, batch)
      const reply = this.target.claim(this.listsOf(queues), queues, asked)
      // Its failure is handled when the loop takes its answer.
      reply.catch(() => undefined)
      this.reserved += asked
      this.inflight.push({ asked, reply })
      if (cpuFree) this.poll?.sent(reply)
    }
  }
}
