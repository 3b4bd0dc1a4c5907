// A TCP proxy on 127.0.0.1 that a test can switch to "blackhole": from then on
// no byte and no close passes in either direction, and nothing is closed, as
// when a firewall or a dead route drops every packet; new connections are
// accepted and left silent. "heal" lets through what was held back, as TCP's
// retransmissions would, and passes on the closes that happened meanwhile.
import { createServer, Socket, type AddressInfo, type Server } from 'node:net'

interface Pair {
  client: Socket
  upstream: Socket | null
  /** Bytes held while blackholed, per direction. */
  toUpstream: Buffer[]
  toClient: Buffer[]
  /** A side closed while blackholed: the other is closed on heal. */
  closed: boolean
}

export class BlackholeProxy {
  private blackholed = false
  private readonly pairs = new Set<Pair>()
  /** Connections accepted so far (a reconnect attempt shows up here). */
  accepted = 0

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host: string; port: number }): Promise<BlackholeProxy> {
    const server = createServer()
    const proxy = new BlackholeProxy(server, target)
    server.on('connection', (client) => proxy.accept(client))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    return proxy
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string {
    const u = new URL(url)
    u.hostname = '127.0.0.1'
    u.port = String(this.port)
    return u.toString()
  }

  blackhole(): void {
    this.blackholed = true
  }

  heal(): void {
    this.blackholed = false
    for (const pair of [...this.pairs]) {
      if (pair.closed) {
        this.drop(pair)
        continue
      }
      if (!pair.upstream) this.connectUpstream(pair)
      this.flush(pair)
    }
  }

  async close(): Promise<void> {
    for (const pair of [...this.pairs]) this.drop(pair)
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private accept(client: Socket): void {
    this.accepted += 1
    const pair: Pair = { client, upstream: null, toUpstream: [], toClient: [], closed: false }
    this.pairs.add(pair)
    client.on('data', (d: Buffer) => {
      if (this.blackholed || !pair.upstream) pair.toUpstream.push(d)
      else pair.upstream.write(d)
    })
    client.on('error', () => undefined)
    client.on('close', () => this.sideClosed(pair))
    if (!this.blackholed) this.connectUpstream(pair)
  }

  private connectUpstream(pair: Pair): void {
    const upstream = new Socket()
    pair.upstream = upstream
    upstream.on('data', (d: Buffer) => {
      if (this.blackholed) pair.toClient.push(d)
      else pair.client.write(d)
    })
    upstream.on('error', () => undefined)
    upstream.on('close', () => this.sideClosed(pair))
    upstream.connect(this.target.port, this.target.host, () => this.flush(pair))
  }

  private flush(pair: Pair): void {
    if (this.blackholed || !pair.upstream || pair.upstream.connecting) return
    for (const d of pair.toUpstream.splice(0)) pair.upstream.write(d)
    for (const d of pair.toClient.splice(0)) pair.client.write(d)
  }

  private sideClosed(pair: Pair): void {
    if (this.blackholed) {
      pair.closed = true
      return
    }
    this.drop(pair)
  }

  private drop(pair: Pair): void {
    this.pairs.delete(pair)
    pair.client.destroy()
    pair.upstream?.destroy()
  }
}
