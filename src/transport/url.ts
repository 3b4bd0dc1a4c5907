import { BadBrokerUrlError } from './errors.js'

/**
 * kombu's `as_uri(include_password=False)`: the password becomes `**`, so
 * `amqp://guest:guest@host//` prints as `amqp://guest:**@host//`.
 */
export function maskUrl(url: string, mask = '**'): string {
  // Every URL of a `;` list (kombu's alternates, Sentinel lists) is masked.
  return url
    .split(';')
    .map((u) => u.replace(/^(\s*[a-z0-9+.-]+:\/\/)([^:@/]*):([^@/]*)@/i, (_m, scheme: string, user: string) => `${scheme}${user}:${mask}@`))
    .join(';')
}

export interface ParsedBrokerUrl {
  scheme: string
  hostname: string
  port: number | undefined
  username: string | undefined
  password: string | undefined
  /** The path without its leading slash (AMQP vhost, Redis db, file directory). */
  path: string
}

/** Of a `;` list, its first URL (kombu's Connection.hostname is `alt[0]`). */
export function parseBrokerUrl(url: string): ParsedBrokerUrl {
  if (url.includes(';')) url = url.split(';').find((u) => u.trim() !== '')?.trim() ?? url
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(url)
  if (!match) throw new BadBrokerUrlError(`not a broker URL: ${maskUrl(url)} (expected scheme://...)`)
  const scheme = match[1]!.toLowerCase()
  const rest = match[2]!
  if (scheme === 'file') {
    return { scheme, hostname: '', port: undefined, username: undefined, password: undefined, path: rest }
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new BadBrokerUrlError(`malformed broker URL: ${maskUrl(url)}`)
  }
  const port = parsed.port === '' ? undefined : Number(parsed.port)
  return {
    scheme,
    hostname: parsed.hostname || 'localhost',
    port,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    path: parsed.pathname.replace(/^\//, ''),
  }
}
