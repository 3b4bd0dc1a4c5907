// Celery's gossip (celery/worker/consumer/gossip.py, spec §3.6): a worker
// listens to the other workers' worker-* events. Their clocks keep its logical
// clock ahead of theirs, their heartbeats tell it who is alive, and a peer that
// stops sending them is logged as Celery logs it: "missed heartbeat from <node>".
// Unless --without-gossip, on RabbitMQ and Redis (Celery's compatible_transports).
import { EventReceiver } from '../../client/index.js'
import type { Logger } from '../../process/index.js'
import { heartbeatExpires } from '../../protocol/index.js'
import type { LamportClock, Transport } from '../../transport/index.js'

/** Gossip(interval=5.0): how often peers are checked for missed heartbeats. */
export const GOSSIP_INTERVAL_SECONDS = 5
/** celery.events.state HEARTBEAT_DRIFT_MAX. */
const HEARTBEAT_DRIFT_MAX_SECONDS = 16

interface Peer {
  /** Local time (seconds) the last online or heartbeat event arrived, as Celery's state keeps it. */
  lastHeartbeat: number
  freq: number
}

export class Gossip {
  private readonly receiver: EventReceiver
  private readonly peers = new Map<string, Peer>()
  /** Celery memoizes its drift warning by hostname: once per peer. */
  private readonly driftWarned = new Set<string>()
  private timer: NodeJS.Timeout | undefined

  constructor(
    transport: Transport,
    private readonly hostname: string,
    private readonly clock: LamportClock,
    private readonly log: Logger,
    private readonly now: () => number = () => Date.now() / 1000,
  ) {
    this.receiver = new EventReceiver(transport, {
      routingKey: 'worker.#',
      onEvent: (event) => this.receive(event),
      onUnreadable: (error) => this.log.error(`gossip: unreadable event ignored: ${error.message}`),
    })
  }

  /** The event-receiver queue Celery names `celeryev.<uuid4>`. */
  get queue(): string {
    return this.receiver.queue
  }

  async start(): Promise<void> {
    await this.receiver.start()
    this.timer = setInterval(() => this.checkPeers(), GOSSIP_INTERVAL_SECONDS * 1000)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    await this.receiver.stop()
  }

  /** The peers whose heartbeats are current (this node not included). */
  alivePeers(): string[] {
    const now = this.now()
    return [...this.peers].filter(([, peer]) => now < expiry(peer)).map(([hostname]) => hostname)
  }

  /** One worker-* event, ours or a peer's. */
  receive(event: Record<string, unknown>): void {
    const type = event.type
    if (typeof type !== 'string' || !type.startsWith('worker-')) return
    // Celery's receiver adjusts the clock for every event, then gossip forwards it for its own.
    this.clock.adjust(event.clock)
    const hostname = event.hostname
    if (typeof hostname !== 'string' || hostname === this.hostname) {
      this.clock.forward()
      return
    }
    if (type === 'worker-offline') {
      if (this.peers.delete(hostname)) this.log.debug(`${hostname} left`)
      return
    }
    if (type !== 'worker-online' && type !== 'worker-heartbeat') return
    const received = this.now()
    const sent = Number(event.timestamp)
    const drift = Math.abs(Math.trunc(received) - Math.trunc(sent))
    if (drift > HEARTBEAT_DRIFT_MAX_SECONDS && !this.driftWarned.has(hostname)) {
      this.driftWarned.add(hostname)
      this.log.warning(
        `Substantial drift from ${hostname} may mean clocks are out of sync.  Current drift is ${drift} seconds.  [orig: ${localDatetime(received)} recv: ${localDatetime(sent)}]`,
      )
    }
    const freq = Number(event.freq)
    const joined = !this.peers.has(hostname) || type === 'worker-online'
    this.peers.set(hostname, { lastHeartbeat: received, freq: Number.isFinite(freq) && freq > 0 ? freq : 2 })
    if (joined) this.log.debug(`${hostname} joined the party`)
  }

  /** Gossip.periodic: a peer whose heartbeats stopped is reported once and forgotten. */
  checkPeers(): void {
    const now = this.now()
    for (const [hostname, peer] of this.peers) {
      if (now < expiry(peer)) continue
      this.log.info(`missed heartbeat from ${hostname}`)
      this.peers.delete(hostname)
    }
  }
}

/** Python's str(datetime.fromtimestamp(t)): local time with microseconds. */
function localDatetime(seconds: number): string {
  const d = new Date(seconds * 1000)
  const p = (n: number, w = 2) => String(n).padStart(w, '0')
  const micros = Math.round((seconds % 1) * 1e6) % 1e6
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(micros, 6)}`
}

function expiry(peer: Peer): number {
  return heartbeatExpires(peer.lastHeartbeat, peer.freq)
}
