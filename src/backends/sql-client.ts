// One small query interface over the three database clients the SQL result
// backends use (pg, mysql2, better-sqlite3), from an SQLAlchemy URL. SQL is
// written with `?` placeholders; PostgreSQL's `$n` are numbered here. The drivers
// are optional packages of a tsq install (docs/install.md), loaded on first use.
import { maskUrl } from '../transport/index.js'
import { codedError, importOptional, loads } from '../protocol/index.js'

export type Dialect = 'postgresql' | 'mysql' | 'sqlite'

export type Row = Record<string, unknown>

export interface SqlClient {
  readonly dialect: Dialect
  /** The URL with its password masked: the only form that reaches a log or an error. */
  readonly displayUrl: string
  /**
   * Ids come from a named sequence, as SQLAlchemy's Sequence('task_id_sequence')
   * makes them on PostgreSQL and on MariaDB 10.3+ (which has sequences); MySQL
   * and SQLite auto-increment instead.
   */
  readonly sequences: boolean
  query(sql: string, params?: unknown[]): Promise<Row[]>
  /** An INSERT, UPDATE or DELETE: how many rows it matched (a compare-and-set reads this). */
  execute(sql: string, params?: unknown[]): Promise<number>
  close(): Promise<void>
}

/** The meta a SQL store is handed (kombu JSON, as text or its bytes), as the record its columns are written from. */
export function metaRecord(meta: string | Uint8Array): Record<string, unknown> {
  return loads(typeof meta === 'string' ? meta : Buffer.from(meta).toString('utf8'), { integers: 'exact' }) as Record<string, unknown>
}

export class DatabaseUrlError extends codedError('CONFIG') {}

export interface ParsedSqlUrl {
  dialect: Dialect
  /** What the client library takes: a URL for pg/mysql2, a file path for SQLite. */
  target: string
}

/**
 * SQLAlchemy's URL forms: `postgresql[+driver]://`, `mysql[+driver]://`,
 * `sqlite:///relative/path`, `sqlite:////absolute/path` and `sqlite://` (memory).
 */
export function parseSqlalchemyUrl(url: string): ParsedSqlUrl {
  const m = /^([a-z0-9]+)(?:\+[a-z0-9_]+)?:\/\/(.*)$/i.exec(url)
  if (!m)
    throw new DatabaseUrlError(
      `not a database URL: ${maskUrl(url)} (expected e.g. postgresql://user@host/db, mysql://user@host/db or sqlite:///path)`,
    )
  const scheme = m[1]!.toLowerCase()
  const rest = m[2]!
  switch (scheme) {
    case 'postgresql':
    case 'postgres':
      return { dialect: 'postgresql', target: `postgresql://${rest}` }
    case 'mysql':
    case 'mariadb':
      return { dialect: 'mysql', target: `mysql://${rest}` }
    case 'sqlite': {
      if (rest === '' || rest === '/') return { dialect: 'sqlite', target: ':memory:' }
      if (!rest.startsWith('/'))
        throw new DatabaseUrlError(`sqlite URLs have no host: ${url} (use sqlite:///relative/path or sqlite:////absolute/path)`)
      return { dialect: 'sqlite', target: decodeURIComponent(rest.slice(1).replace(/\?.*$/, '')) }
    }
    default:
      throw new DatabaseUrlError(`unsupported database: ${scheme} (in ${maskUrl(url)}); tsq speaks postgresql://, mysql:// and sqlite://`)
  }
}

/** The password never leaves in a driver's message either. */
function scrub(error: unknown, url: string): Error {
  const message = (error as Error)?.message ?? String(error)
  let password = ''
  try {
    password = decodeURIComponent(new URL(url).password)
  } catch {
    // No password to hide.
  }
  const clean = password ? message.split(password).join('****') : message
  return Object.assign(new Error(clean), { code: (error as { code?: string })?.code })
}

// Each driver as one import, so a check up front and the client load the same module.
const loadPg = (displayUrl: string) => importOptional(() => import('pg'), 'pg', displayUrl)
const loadMysql = (displayUrl: string) => importOptional(() => import('mysql2/promise'), 'mysql2', displayUrl)
const loadSqlite = (displayUrl: string) => importOptional(() => import('better-sqlite3'), 'better-sqlite3', displayUrl)

/**
 * Loads the URL's driver without connecting: a driver the project has not
 * installed is a MissingPackageError here, at start-up, as Celery's database
 * backend fails at start without SQLAlchemy. A URL that does not parse is left
 * to openSqlClient, which says why when the store is first used.
 */
export async function requireSqlDriver(url: string): Promise<void> {
  let dialect: Dialect
  try {
    dialect = parseSqlalchemyUrl(url).dialect
  } catch {
    return
  }
  const displayUrl = maskUrl(url)
  if (dialect === 'postgresql') await loadPg(displayUrl)
  else if (dialect === 'mysql') await loadMysql(displayUrl)
  else await loadSqlite(displayUrl)
}

export interface SqlClientOptions {
  /** database_short_lived_sessions: a connection per operation instead of a pool. */
  shortLived?: boolean
}

export async function openSqlClient(url: string, options: SqlClientOptions = {}): Promise<SqlClient> {
  const parsed = parseSqlalchemyUrl(url)
  const displayUrl = maskUrl(url)
  const wrap = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn()
    } catch (error) {
      throw scrub(error, url)
    }
  }
  switch (parsed.dialect) {
    case 'postgresql': {
      const pg = (await loadPg(displayUrl)).default
      // timestamp without time zone stays the naive UTC text Celery wrote, not a local-time Date.
      const types = {
        getTypeParser: (oid: number, format?: 'text' | 'binary') =>
          oid === 1114 ? (v: string) => v : pg.types.getTypeParser(oid, format as 'text'),
      }
      const connectionString = parsed.target.replace(/\?.*$/, '')
      const pool = new pg.Pool({
        connectionString,
        max: options.shortLived ? 1 : 4,
        idleTimeoutMillis: options.shortLived ? 1 : 10_000,
        allowExitOnIdle: true,
        types,
      })
      pool.on('error', () => undefined)
      return {
        dialect: 'postgresql',
        displayUrl,
        sequences: true,
        query: (sql, params = []) =>
          wrap(async () => {
            let n = 0
            const result = await pool.query(
              sql.replace(/\?/g, () => `$${++n}`),
              params,
            )
            return result.rows as Row[]
          }),
        execute: (sql, params = []) =>
          wrap(async () => {
            let n = 0
            const result = await pool.query(
              sql.replace(/\?/g, () => `$${++n}`),
              params,
            )
            return result.rowCount ?? 0
          }),
        close: () => pool.end(),
      }
    }
    case 'mysql': {
      const mysql = await loadMysql(displayUrl)
      const target = new URL(parsed.target)
      const pool = mysql.createPool({
        host: target.hostname || '127.0.0.1',
        port: target.port ? Number(target.port) : 3306,
        user: decodeURIComponent(target.username) || undefined,
        password: decodeURIComponent(target.password) || undefined,
        database: decodeURIComponent(target.pathname.slice(1)) || undefined,
        connectionLimit: options.shortLived ? 1 : 4,
        maxIdle: options.shortLived ? 0 : 4,
        idleTimeout: options.shortLived ? 1 : 10_000,
        dateStrings: true,
        supportBigNumbers: true,
      })
      const version = await wrap(async () => {
        const [rows] = await pool.query('SELECT VERSION() AS v')
        return String((rows as Row[])[0]?.v ?? '')
      }).catch(async (error: unknown) => {
        await pool.end().catch(() => undefined)
        throw error
      })
      return {
        dialect: 'mysql',
        displayUrl,
        sequences: /mariadb/i.test(version) && !/^(5|10\.[0-2])\./.test(version),
        query: (sql, params = []) =>
          wrap(async () => {
            const [rows] = await pool.query(sql, params)
            return (Array.isArray(rows) ? rows : []) as Row[]
          }),
        execute: (sql, params = []) =>
          wrap(async () => {
            const [header] = await pool.query(sql, params)
            return Number((header as { affectedRows?: number }).affectedRows ?? 0)
          }),
        close: () => pool.end(),
      }
    }
    case 'sqlite': {
      const Database = (await loadSqlite(displayUrl)).default
      // Same five seconds of waiting on a locked file as Python's sqlite3 module.
      const db = await wrap(async () => new Database(parsed.target, { timeout: 5000 }))
      return {
        dialect: 'sqlite',
        displayUrl,
        sequences: false,
        query: (sql, params = []) =>
          wrap(async () => {
            const statement = db.prepare(sql)
            return statement.reader ? (statement.all(...params) as Row[]) : (statement.run(...params), [])
          }),
        execute: (sql, params = []) => wrap(async () => db.prepare(sql).run(...params).changes),
        close: async () => {
          db.close()
        },
      }
    }
  }
}

/** A name quoted for the dialect, schema-qualified when a schema is given. */
export function qualified(dialect: Dialect, name: string, schema?: string | null): string {
  const q = (s: string) => (dialect === 'mysql' ? `\`${s.replace(/`/g, '``')}\`` : `"${s.replace(/"/g, '""')}"`)
  return schema ? `${q(schema)}.${q(name)}` : q(name)
}

/**
 * The error a query on a table that is not there gets, as PostgreSQL, MariaDB
 * and SQLite word it: a missing table means "run the migrations", while a
 * missing database (`database "x" does not exist`) or user is a different
 * fault, told as the driver says it.
 */
export function isMissingTable(error: unknown): boolean {
  return /relation \S+ does not exist|no such table|Table \S+ doesn't exist/i.test((error as Error | undefined)?.message ?? '')
}
