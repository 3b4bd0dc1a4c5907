import { createTransport, maskUrl, parseBrokerUrl, type Transport, type TransportSettings } from '../transport/index.js'

/** Connects a transport for one CLI operation and always closes it afterwards. `settings`: the app's broker_transport_options. */
export async function withTransport<T>(
  brokerUrl: string,
  work: (transport: Transport) => Promise<T>,
  settings: TransportSettings = {},
): Promise<T> {
  const transport = await openTransport(brokerUrl, settings)
  try {
    return await work(transport)
  } finally {
    await transport.close({ requeueUnacked: true }).catch(() => undefined)
  }
}

/**
 * withTransport for two brokers at once (migrate's source and destination):
 * both connect at the same time, rather than the second only once the first
 * is up, which a short run would wait for. Both are closed afterwards, and if
 * one cannot connect, the other is closed before the error is thrown.
 */
export async function withTransportPair<T>(
  urls: readonly [string, string],
  work: (first: Transport, second: Transport) => Promise<T>,
): Promise<T> {
  const [first, second] = await Promise.allSettled([openTransport(urls[0]), openTransport(urls[1])])
  if (first.status === 'rejected' || second.status === 'rejected') {
    for (const opened of [first, second])
      if (opened.status === 'fulfilled') await opened.value.close({ requeueUnacked: true }).catch(() => undefined)
    throw first.status === 'rejected' ? first.reason : (second as PromiseRejectedResult).reason
  }
  try {
    return await work(first.value, second.value)
  } finally {
    // In the order nested withTransport calls would close them: the second (migrate's destination) drains its publishes first.
    await second.value.close({ requeueUnacked: true }).catch(() => undefined)
    await first.value.close({ requeueUnacked: true }).catch(() => undefined)
  }
}

async function openTransport(brokerUrl: string, settings: TransportSettings = {}): Promise<Transport> {
  const transport = await createTransport(brokerUrl, settings)
  try {
    await transport.connect()
  } catch (error) {
    await transport.close({ requeueUnacked: true }).catch(() => undefined)
    const err = error as Error & { code?: string }
    if (err.code === 'BROKER_UNREACHABLE') {
      // The transports already name the (masked) URL; say it once.
      const scrubbed = scrubPassword(err.message, brokerUrl)
      err.message = scrubbed.startsWith(`cannot connect to ${maskUrl(brokerUrl)}`)
        ? scrubbed
        : `cannot connect to ${maskUrl(brokerUrl)}: ${scrubbed}`
    }
    throw err
  }
  return transport
}

/** Drivers sometimes echo the URL they were given; a password never reaches a line we print. */
export function scrubPassword(text: string, url: string): string {
  const { password } = parseBrokerUrl(url)
  const masked = maskUrl(url)
  // The masked URL is kept whole: a password equal to the user name (guest:guest) must not mask the user too.
  return text
    .split(url)
    .join(masked)
    .split(masked)
    .map((part) => (password ? part.split(password).join('**') : part))
    .join(masked)
}
