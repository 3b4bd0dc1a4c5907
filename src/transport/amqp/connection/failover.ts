// Connecting through a failover list (`amqp://a//;amqp://b//`, the nodes of a
// cluster) as kombu does: every failed attempt moves to the next URL, and the
// back-off comes only once a whole round of them has failed.
import type { ChannelModel } from 'amqplib'
import { BrokerConnectionError } from '../../errors.js'
import type { ConnectionRetry } from '../../transport.js'
import type { FailoverCycle } from '../../url.js'
import { reconnectDelayMs, sleep } from './backoff.js'
import type { AmqpConnectSettings } from './connect-options.js'

/**
 * The first connection: one try of each URL of the list, so a command
 * given a cluster reaches it through any node that is up. All down: the
 * error names every URL tried.
 */
export async function openFirstReachable(
  nodes: FailoverCycle<AmqpConnectSettings>,
  open: () => Promise<ChannelModel>,
  displayUrl: string,
): Promise<ChannelModel> {
  const failures: string[] = []
  for (;;) {
    try {
      const conn = await open()
      nodes.succeeded()
      return conn
    } catch (err) {
      if (!(err instanceof BrokerConnectionError) || nodes.entries.length === 1) throw err
      failures.push(err.message)
      if (nodes.failed()) {
        throw new BrokerConnectionError(`cannot connect to any broker of ${displayUrl}: ${failures.join('; ')}`, { cause: err })
      }
    }
  }
}

export interface Reconnecting {
  nodes: FailoverCycle<AmqpConnectSettings>
  /** Stops the back-off wait (the transport closed). */
  signal: AbortSignal
  /** Still worth trying: the transport is reconnecting, not closed. */
  wanted(): boolean
  open(): Promise<ChannelModel>
  /** Topology replayed and consumers restarted on `conn`; throws if it fails meanwhile. */
  restore(conn: ChannelModel): Promise<void>
  /** True when `conn` can be taken into use (it has not closed since it opened). */
  usable(conn: ChannelModel): boolean
  /** Takes the restored connection into use, in the same turn as the check before it. */
  adopt(conn: ChannelModel): void
  /** Each failed attempt, with the wait that follows it. */
  retry(retry: ConnectionRetry): void
}

/**
 * Reconnects until a connection is restored or no longer wanted. The node
 * just lost counts as a failed attempt: with a list the next URL is tried at
 * once; the back-off comes after each round in which every URL failed (with
 * one URL, before every attempt).
 */
export async function reconnectThroughList(r: Reconnecting): Promise<void> {
  let round = 0
  let delayMs = r.nodes.failed() ? reconnectDelayMs(round++) : 0
  // Each failed attempt is said once (connection:retry), with the wait that follows it.
  const failed = (attempt: number, url: string, err: unknown): void => {
    const backOff = r.nodes.failed()
    delayMs = backOff ? reconnectDelayMs(round++) : 0
    const reason = err instanceof Error ? err.message.replace(`cannot connect to ${url}: `, '') : String(err)
    if (r.wanted()) r.retry({ url, reason, attempt, delayMs, failover: !backOff })
  }
  for (let attempt = 1; r.wanted(); attempt += 1) {
    if (delayMs > 0) await sleep(delayMs, r.signal)
    if (!r.wanted()) return
    const url = r.nodes.current.displayUrl
    let conn: ChannelModel
    try {
      conn = await r.open()
    } catch (err) {
      failed(attempt, url, err)
      continue
    }
    try {
      await r.restore(conn)
    } catch (err) {
      await conn.close().catch(() => undefined)
      failed(attempt, url, err)
      continue
    }
    if (!r.wanted() || !r.usable(conn)) {
      await conn.close().catch(() => undefined)
      failed(attempt, url, new Error('connection closed while its topology was restored'))
      continue
    }
    r.nodes.succeeded()
    r.adopt(conn)
    return
  }
}
