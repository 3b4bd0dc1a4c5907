// `tsq list bindings`: which queue is bound to which exchange by which key.
// Redis and file:// hold their bindings themselves (kombu's binding sets, the
// file broker's bindings/ folder); RabbitMQ tells them only through its
// management HTTP API (what Celery reaches for through pyrabbit, which 5.2.6
// does not ship).
import { listVirtualBindings, type BindingRow, maskUrl, parseBrokerUrl, type TransportSettings } from '../transport/index.js'
import { TsqError } from '../protocol/index.js'

export type { BindingRow } from '../transport/index.js'

/** Why the bindings could not be read; BROKER_UNREACHABLE exits 69, as every unreachable broker. */
export class BindingsError extends TsqError {
  constructor(code: 'BROKER_UNREACHABLE' | 'BAD_URL', message: string) {
    super(code, message)
  }
}

const MANAGEMENT_PORT = 15672
const MANAGEMENT_TIMEOUT_MS = 10_000

/** The management API's base URL and credentials: --management-url, else the broker's host, port 15672 and login. */
export function managementTarget(
  brokerUrl: string,
  managementUrl?: string,
): { base: string; vhost: string; auth: string; display: string } {
  const broker = parseBrokerUrl(brokerUrl)
  const vhost = decodeURIComponent(broker.path) || '/'
  let target: URL
  try {
    target = new URL(
      managementUrl ?? `http://${broker.hostname.includes(':') ? `[${broker.hostname}]` : broker.hostname}:${MANAGEMENT_PORT}/`,
    )
  } catch {
    throw new BindingsError('BAD_URL', `malformed --management-url: ${maskUrl(managementUrl ?? '')}`)
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new BindingsError('BAD_URL', `--management-url must be http:// or https://: ${maskUrl(managementUrl ?? '')}`)
  const user = target.username ? decodeURIComponent(target.username) : (broker.username ?? 'guest')
  const password = target.password ? decodeURIComponent(target.password) : (broker.password ?? 'guest')
  target.username = ''
  target.password = ''
  const base = target.toString().replace(/\/+$/, '')
  return { base, vhost, auth: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`, display: base }
}

interface ManagementBinding {
  source: string
  destination: string
  destination_type: string
  routing_key: string
}

async function rabbitBindings(brokerUrl: string, managementUrl?: string): Promise<BindingRow[]> {
  const target = managementTarget(brokerUrl, managementUrl)
  const url = `${target.base}/api/bindings/${encodeURIComponent(target.vhost)}`
  let response: Response
  try {
    response = await fetch(url, { headers: { authorization: target.auth }, signal: AbortSignal.timeout(MANAGEMENT_TIMEOUT_MS) })
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name
    throw new BindingsError(
      'BROKER_UNREACHABLE',
      `RabbitMQ's management API is not answering at ${target.display} (${cause}): enable it with \`rabbitmq-plugins enable rabbitmq_management\`, or give its address with --management-url`,
    )
  }
  if (response.status === 401)
    throw new BindingsError(
      'BROKER_UNREACHABLE',
      `RabbitMQ's management API at ${target.display} refused the login (401): give a user with the management tag in --management-url`,
    )
  if (response.status === 404)
    throw new BindingsError('BROKER_UNREACHABLE', `RabbitMQ's management API at ${target.display} has no vhost '${target.vhost}' (404)`)
  if (!response.ok)
    throw new BindingsError(
      'BROKER_UNREACHABLE',
      `RabbitMQ's management API at ${target.display} answered ${response.status} ${response.statusText}`,
    )
  const rows = (await response.json()) as ManagementBinding[]
  return rows
    .filter((b) => b.destination_type === 'queue')
    .map((b) => ({ queue: b.destination, exchange: b.source, routingKey: b.routing_key }))
}

export async function listBindings(
  brokerUrl: string,
  options: { settings?: TransportSettings; managementUrl?: string } = {},
): Promise<BindingRow[]> {
  const scheme = parseBrokerUrl(brokerUrl).scheme
  if (scheme === 'amqp' || scheme === 'amqps' || scheme === 'pyamqp') return rabbitBindings(brokerUrl, options.managementUrl)
  return listVirtualBindings(brokerUrl, options.settings)
}

/** Celery's lines: `f'{q:<28} {e:<28} {r}'`, a header and a rule of dashes first. */
export function formatBindings(rows: readonly BindingRow[]): string[] {
  const line = (q: string, e: string, r: string) => `${q.padEnd(28)} ${e.padEnd(28)} ${r}`
  return [
    line('Queue', 'Exchange', 'Routing Key'),
    line('-'.repeat(16), '-'.repeat(16), '-'.repeat(16)),
    ...rows.map((b) => line(b.queue, b.exchange, b.routingKey)),
  ]
}
