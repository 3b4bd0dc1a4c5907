import { createTransport, maskUrl, parseBrokerUrl, type Transport, type TransportSettings } from '../transport/index.js'

/** Connects a transport for one CLI operation and always closes it afterwards. `settings`: the app's broker_transport_options. */
export async function withTransport<T>(brokerUrl: string, work: (transport: Transport) => Promise<T>, settings: TransportSettings = {}): Promise<T> {
  const transport = await createTransport(brokerUrl, settings)
  try {
    await transport.connect()
  } catch (error) {
    await transport.close({ requeueUnacked: true }).catch(() => undefined)
    const err = error as Error & { code?: string }
    if (err.code === 'BROKER_UNREACHABLE') {
      // The transports already name the (masked) URL; say it once.
      const scrubbed = scrubPassword(err.message, brokerUrl)
      err.message = scrubbed.startsWith(`cannot connect to ${maskUrl(brokerUrl)}`) ? scrubbed : `cannot connect to ${maskUrl(brokerUrl)}: ${scrubbed}`
    }
    throw err
  }
  try {
    return await work(transport)
  } finally {
    await transport.close({ requeueUnacked: true }).catch(() => undefined)
  }
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
