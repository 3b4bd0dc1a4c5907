import { createTransport, maskUrl, parseBrokerUrl, type Transport, type TransportSettings } from '../transport/index.js'

/** Connects a transport for one CLI operation and always closes it afterwards. `settings`: the app's broker_transport_options. */
export async function withTransport<T>(brokerUrl: string, work: (transport: Transport) => Promise<T>, settings: TransportSettings = {}): Promise<T> {
  const transport = await createTransport(brokerUrl, settings)
  try {
    await transport.connect()
  } catch (error) {
    await transport.close({ requeueUnacked: true }).catch(() => undefined)
    const err = error as Error & { code?: string }
    if (err.code === 'BROKER_UNREACHABLE') err.message = `cannot connect to ${maskUrl(brokerUrl)}: ${scrubPassword(err.message, brokerUrl)}`
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
  let out = text.split(url).join(maskUrl(url))
  if (password) out = out.split(password).join('**')
  return out
}
