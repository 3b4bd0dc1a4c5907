// Where the dashboard's basic-auth credentials come from: --basic-auth (seen by
// anyone who runs `ps`), --basic-auth-file, or the environment, as Flower reads
// FLOWER_BASIC_AUTH; TSQ_DASHBOARD_BASIC_AUTH is the same in tsq's own naming.
import { readFileSync, statSync } from 'node:fs'
import { UsageError } from '../cli/errors.js'

export const BASIC_AUTH_ENV = ['TSQ_DASHBOARD_BASIC_AUTH', 'FLOWER_BASIC_AUTH'] as const

/** A credentials file bigger than this is not one. */
const MAX_FILE_BYTES = 64 * 1024

export interface BasicAuthSource {
  flag?: string
  file?: string
  env: NodeJS.ProcessEnv
}

export interface ResolvedBasicAuth {
  users: { user: string; pass: string }[]
  /** Where they came from, for the start-up line (never the values). */
  source: string
  /** One line to log, when the file can be read by other users. */
  warning?: string
}

/** `user:pass[,user:pass]`, as --basic-auth and the environment give it. */
export function parseBasicAuth(spec: string, source = '--basic-auth'): { user: string; pass: string }[] {
  return spec.split(',').map((pair, i) => {
    const colon = pair.indexOf(':')
    // The entry is not echoed: it may be a password typed without its user.
    if (colon <= 0) throw new UsageError(`${source}: expected user:password[,user:password], entry ${i + 1} has no 'user:'`)
    return { user: pair.slice(0, colon), pass: pair.slice(colon + 1) }
  })
}

/**
 * The file holds `user:password` entries separated by commas or newlines
 * (blank lines and lines starting with # ignored).
 */
export function readBasicAuthFile(path: string): { spec: string; warning?: string } {
  let text: string
  let mode: number
  try {
    const st = statSync(path)
    if (!st.isFile()) throw new UsageError(`--basic-auth-file ${path}: not a file`)
    if (st.size > MAX_FILE_BYTES) throw new UsageError(`--basic-auth-file ${path}: over ${MAX_FILE_BYTES} bytes, not a credentials file`)
    mode = st.mode & 0o777
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if (error instanceof UsageError) throw error
    throw new UsageError(`--basic-auth-file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  const entries = text
    .split(/[\r\n,]+/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
  if (entries.length === 0) throw new UsageError(`--basic-auth-file ${path}: no user:password entry`)
  const warning =
    mode & 0o077
      ? `--basic-auth-file ${path} can be read by other users (mode ${mode.toString(8).padStart(4, '0')}): chmod 600 it`
      : undefined
  return { spec: entries.join(','), warning }
}

/** --basic-auth > --basic-auth-file > TSQ_DASHBOARD_BASIC_AUTH > FLOWER_BASIC_AUTH; undefined when none is given. */
export function resolveBasicAuth(o: BasicAuthSource): ResolvedBasicAuth | undefined {
  if (o.flag !== undefined && o.file !== undefined) throw new UsageError('--basic-auth and --basic-auth-file: give one of them')
  if (o.flag !== undefined) return { users: parseBasicAuth(o.flag), source: '--basic-auth' }
  if (o.file !== undefined) {
    const { spec, warning } = readBasicAuthFile(o.file)
    return { users: parseBasicAuth(spec, `--basic-auth-file ${o.file}`), source: `--basic-auth-file ${o.file}`, warning }
  }
  for (const name of BASIC_AUTH_ENV) {
    const value = o.env[name]
    if (value !== undefined && value.trim() !== '') return { users: parseBasicAuth(value.trim(), `$${name}`), source: `$${name}` }
  }
  return undefined
}
