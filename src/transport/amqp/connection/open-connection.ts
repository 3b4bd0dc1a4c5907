import amqp from '../amqplib.js'
import type { ChannelModel } from 'amqplib'
import { isIP } from 'node:net'
import { BrokerConnectionError } from '../../errors.js'
import { describeTlsFailure } from '../../tls.js'
import { describeConnectFailure } from '../classify-error.js'
import { amqpSocketTlsOptions, type AmqpConnectSettings } from './connect-options.js'
import { amqplibAsMeasured } from '../tricks/amqplib-pin.js'
import { batchSocketWrites } from '../tricks/batch-writes.js'
import { trickOn } from '../../../tricks/index.js'

/** A dead or firewalled broker must fail `connect()` quickly, not hang on a SYN. */
const CONNECT_TIMEOUT_MS = 5_000

/**
 * One connection attempt, bounded in time: a refused port, wrong credentials,
 * a failed TLS verification or a silent host each become one
 * BrokerConnectionError line. The connection is named
 * (client_properties.connection_name) so operators can find it.
 */
export async function openAmqpConnection(settings: AmqpConnectSettings, connectionName: string): Promise<ChannelModel> {
  let timer: NodeJS.Timeout | undefined
  // Read on every attempt, so a reconnect picks up a renewed certificate.
  const tls = amqpSocketTlsOptions(settings)
  const socketOptions = {
    ...tls,
    ...(settings.external ? { credentials: amqp.credentials.external() } : {}),
    clientProperties: { connection_name: connectionName },
    timeout: CONNECT_TIMEOUT_MS,
    // Without TCP_NODELAY the handshake's small frames wait on Nagle and delayed ACKs.
    noDelay: true,
  }
  // amqplib always sets the TLS server name to the host, and Node warns
  // (DEP0123) when that is an IP address, which would put a stray line on a
  // client command's stderr. The certificate is still checked against the IP
  // (tls.ts's checkServerIdentity); only that warning is muted, and only for
  // the synchronous tls.connect inside amqp.connect().
  const quietIp = settings.tls !== null && isIP(settings.connect.hostname ?? '') !== 0
  const wasQuiet = process.noDeprecation
  if (quietIp) process.noDeprecation = true
  let attempt: Promise<ChannelModel>
  try {
    attempt = amqp.connect(settings.connect, socketOptions)
  } finally {
    if (quietIp) process.noDeprecation = wasQuiet
  }
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('connection timed out'), { code: 'ETIMEDOUT' })), CONNECT_TIMEOUT_MS)
  })
  try {
    const conn = await Promise.race([attempt, timeout])
    if (trickOn('batchWrites') && amqplibAsMeasured()) batchSocketWrites(conn)
    return conn
  } catch (err) {
    // The handshake may still complete after the deadline; do not leak it.
    attempt.then((late) => late.close()).catch(() => undefined)
    const reason = describeTlsFailure(err) ?? describeConnectFailure(err)
    throw new BrokerConnectionError(`cannot connect to ${settings.displayUrl}: ${reason}`, { cause: err })
  } finally {
    clearTimeout(timer)
  }
}
