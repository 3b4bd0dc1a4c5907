// Databases for the SQL result backend tests: PostgreSQL (127.0.0.1:5432,
// postgres, trust) and MariaDB (127.0.0.1:3306, root, no password) each get a
// database of their own, `tsq_test_<purpose>_<random>`, created here and
// dropped by the test; SQLite a file in a temporary directory. Parallel lanes
// never share one.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export type DbKind = 'postgresql' | 'mysql' | 'sqlite'

export interface TestDatabase {
  kind: DbKind
  /** SQLAlchemy URL (what follows `db+`). */
  url: string
  /** Django's DATABASES entry for it. */
  django: Record<string, string>
  drop(): Promise<void>
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' })
    socket.setTimeout(1000)
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => (socket.destroy(), resolve(false)))
  })
}

/** A skip reason when the server is down outside CI; throws in CI. */
export async function databaseSkipReason(kind: DbKind): Promise<string | false> {
  if (kind === 'sqlite') return false
  const port = kind === 'postgresql' ? 5432 : 3306
  if (await portOpen(port)) return false
  const reason = `${kind} not reachable on 127.0.0.1:${port}; skipping ${kind} tests`
  if (process.env.CI) throw new Error(`CI requires ${kind}: ${reason}`)
  process.stderr.write(`SKIP: ${reason}\n`)
  return reason
}

export async function createTestDatabase(kind: DbKind, purpose: string): Promise<TestDatabase> {
  const name = `tsq_test_${purpose}_${randomBytes(4).toString('hex')}`
  if (kind === 'postgresql') {
    const pg = (await import('pg')).default
    const admin = new pg.Client({ connectionString: 'postgresql://postgres@127.0.0.1/postgres' })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    return {
      kind,
      url: `postgresql://postgres@127.0.0.1/${name}`,
      django: { ENGINE: 'django.db.backends.postgresql', NAME: name, USER: 'postgres', HOST: '127.0.0.1', PORT: '5432' },
      drop: async () => {
        const c = new pg.Client({ connectionString: 'postgresql://postgres@127.0.0.1/postgres' })
        await c.connect()
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        await c.end()
      },
    }
  }
  if (kind === 'mysql') {
    const mysql = await import('mysql2/promise')
    const admin = await mysql.createConnection({ host: '127.0.0.1', user: 'root' })
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    return {
      kind,
      url: `mysql+pymysql://root@127.0.0.1/${name}`,
      django: { ENGINE: 'django.db.backends.mysql', NAME: name, USER: 'root', HOST: '127.0.0.1', PORT: '3306' },
      drop: async () => {
        const c = await mysql.createConnection({ host: '127.0.0.1', user: 'root' })
        await c.query(`DROP DATABASE IF EXISTS ${name}`)
        await c.end()
      },
    }
  }
  const dir = mkdtempSync(join(tmpdir(), `${name}-`))
  const file = join(dir, `${name}.sqlite`)
  return {
    kind,
    url: `sqlite:///${file}`,
    django: { ENGINE: 'django.db.backends.sqlite3', NAME: file },
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  }
}
