import amqp from './amqplib.js'
import type { ChannelModel } from 'amqplib'
import { BrokerConnectionError } from '../errors.js'
import { describeConnectFailure } from './classify-error.js'
import type { AmqpConnectSettings } from './connect-options.js'

/** A dead or firewalled broker must fail `connect()` quickly, not hang on a SYN. */
const CONNECT_TIMEOUT_MS = 5_000

/**
 * One connection attempt, bounded in time: a refused port, wrong credentials or
 * a silent host each become one BrokerConnectionError line. The connection is
 * named (client_properties.connection_name) so operators can find it.
 */
export async function openAmqpConnection(settings: AmqpConnectSettings, connectionName: string): Promise<ChannelModel> {
  let timer: NodeJS.Timeout | undefined
  const attempt = amqp.connect(settings.connect, {
    clientProperties: { connection_name: connectionName },
    timeout: CONNECT_TIMEOUT_MS,
    // Without TCP_NODELAY the handshake's small frames meet Nagle and delayed
    // ACKs: ~40 ms of a one-shot `tsq inspect` went to waiting on loopback.
    noDelay: true,
  })
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('connection timed out'), { code: 'ETIMEDOUT' })), CONNECT_TIMEOUT_MS)
  })
  try {
    return await Promise.race([attempt, timeout])
  } catch (err) {
    // The handshake may still complete after the deadline; do not leak it.
    attempt.then((late) => late.close()).catch(() => undefined)
    throw new BrokerConnectionError(`cannot connect to ${settings.displayUrl}: ${describeConnectFailure(err)}`, { cause: err })
  } finally {
    clearTimeout(timer)
  }
}
