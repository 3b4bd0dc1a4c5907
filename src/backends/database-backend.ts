// Celery's SQLAlchemy result backend (`db+<sqlalchemy-url>`,
// celery/backends/database): one row per task in celery_taskmeta, one per
// saved group in celery_tasksetmeta, the tables created as SQLAlchemy's
// create_all would when they are missing. The `result` column is a
// PickleType: plain values go through protocol/plain-pickle (strict subset);
// args and kwargs, with result_extended, are JSON text in binary columns.
import {
  PyFloat,
  PyTuple,
  checkJsonText,
  dumps,
  dumpsGroupPickle,
  dumpsPickle,
  isoformatUtc,
  loads,
  loadsGroupPickle,
  loadsPickle,
  MissingPackageError,
  type ResultMeta,
} from '../protocol/index.js'
import { BrokerConnectionError, maskUrl } from '../transport/index.js'
import { keepsStoredSuccess, pollUntilReady, type ResultBackend } from './backend.js'
import { JSON_RESULTS, type ResultCodec } from './result-codec.js'
import { SqlFailedStore, type FailedStore } from './failed/index.js'
import { metaRecord, openSqlClient, qualified, type Dialect, type Row, type SqlClient } from './sql-client.js'

/** database_table_names, database_table_schemas, database_short_lived_sessions. */
export interface DatabaseOptions {
  /** database_url: the Django database for django-db (else DATABASE_URL). */
  url?: string
  tableNames?: { task?: string; group?: string }
  tableSchemas?: { task?: string; group?: string }
  shortLivedSessions?: boolean
}

export function databaseOptionsFromConf(conf: Record<string, unknown>): DatabaseOptions {
  const pair = (v: unknown) => (v && typeof v === 'object' ? (v as { task?: string; group?: string }) : undefined)
  return {
    url: typeof conf.database_url === 'string' && conf.database_url ? conf.database_url : undefined,
    tableNames: pair(conf.database_table_names),
    tableSchemas: pair(conf.database_table_schemas),
    shortLivedSessions: conf.database_short_lived_sessions === true,
  }
}

/** Celery's ResultSet subpolling_interval is 0.5 s; a shorter poll answers sooner for little cost. */
const POLL_MS = 200

const TASK_COLUMNS = ['status', 'result', 'date_done', 'traceback', 'name', 'args', 'kwargs', 'worker', 'retries', 'queue'] as const

function ddl(client: SqlClient, table: string, sequence: string, columns: string, unique: string): string[] {
  const create = (id: string, tail: string) =>
    `CREATE TABLE IF NOT EXISTS ${table} (\n\t${id}, \n${columns}, \n${tail}\tUNIQUE (${unique})\n)`
  if (client.sequences) return [`CREATE SEQUENCE IF NOT EXISTS ${sequence}`, create('id INTEGER NOT NULL', '\tPRIMARY KEY (id), \n')]
  if (client.dialect === 'mysql') return [create('id INTEGER NOT NULL AUTO_INCREMENT', '\tPRIMARY KEY (id), \n')]
  return [create('id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT', '')]
}

/** The next id from the sequence, in the dialect's spelling. */
function nextval(client: SqlClient, sequence: string): string {
  return client.dialect === 'postgresql' ? `nextval('${sequence.replace(/'/g, "''")}')` : `NEXTVAL(${sequence})`
}

/** SQLAlchemy's column types per dialect (LargeBinary, DateTime). */
function types(dialect: Dialect): { blob: string; datetime: string } {
  return dialect === 'postgresql' ? { blob: 'BYTEA', datetime: 'TIMESTAMP WITHOUT TIME ZONE' } : { blob: 'BLOB', datetime: 'DATETIME' }
}

/** Naive UTC, as datetime.utcnow() is stored: `2026-11-27 21:45:30.595644`. */
function sqlDateTime(iso: string | null | undefined): string | null {
  if (!iso) return null
  return iso.replace('T', ' ').replace(/(Z|[+-]\d\d:\d\d)$/, '')
}

/** What the DB hands back for a DATETIME, as the isoformat() text result metas carry. */
function isoDateTime(value: unknown): string | null {
  if (value === null || value === undefined) return null
  if (value instanceof Date) return isoformatUtc(value, '')
  return String(value).replace(' ', 'T')
}

/** A pickled plain value as the rest of tsq holds results: tuples as arrays. */
function plain(v: unknown): unknown {
  if (v instanceof PyTuple) return v.items.map(plain)
  if (v instanceof PyFloat) return v.value
  if (Array.isArray(v)) return v.map(plain)
  if (v && typeof v === 'object' && !(v instanceof Uint8Array)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
  return v
}

/** The value Celery pickles: an exception's args as a tuple, as `prepare_exception` gives them. */
function pickledResult(status: string, result: unknown): unknown {
  if (
    (status === 'FAILURE' || status === 'RETRY' || status === 'REVOKED') &&
    result &&
    typeof result === 'object' &&
    Array.isArray((result as { exc_message?: unknown }).exc_message)
  ) {
    const exc = result as { exc_message: unknown[] }
    return { ...exc, exc_message: new PyTuple(exc.exc_message) }
  }
  return result
}

function bytesOf(v: unknown): Buffer | null {
  if (v === null || v === undefined) return null
  if (v instanceof Uint8Array) return Buffer.from(v)
  return Buffer.from(String(v), 'latin1')
}

export class DatabaseResultBackend implements ResultBackend {
  readonly displayUrl: string
  readonly codec: ResultCodec = JSON_RESULTS
  readonly chordUnlock = true
  private client: Promise<SqlClient> | undefined
  private readonly taskTable: string
  private readonly groupTable: string
  private readonly taskSequence: string
  private readonly groupSequence: string

  /** `url`: the SQLAlchemy URL (without `db+`). */
  constructor(
    private readonly url: string,
    private readonly options: DatabaseOptions = {},
  ) {
    this.displayUrl = `db+${maskUrl(url)}`
    const dialect = /^(postgres|mysql|mariadb|sqlite)/i.exec(url)?.[1]?.toLowerCase()
    const d: Dialect =
      dialect === 'postgres' ? 'postgresql' : dialect === 'mariadb' ? 'mysql' : ((dialect as Dialect | undefined) ?? 'postgresql')
    const names = options.tableNames ?? {}
    const schemas = options.tableSchemas ?? {}
    this.taskTable = qualified(d, names.task ?? 'celery_taskmeta', schemas.task)
    this.groupTable = qualified(d, names.group ?? 'celery_tasksetmeta', schemas.group)
    // Model.configure() moves the id sequences into the table's schema.
    this.taskSequence = qualified(d, 'task_id_sequence', schemas.task)
    this.groupSequence = qualified(d, 'taskset_id_sequence', schemas.group)
  }

  /** Connects and creates the tables once, as SessionManager.prepare_models does on first use. */
  private ready(): Promise<SqlClient> {
    this.client ??= (async () => {
      let client: SqlClient | undefined
      try {
        client = await openSqlClient(this.url, { shortLived: this.options.shortLivedSessions })
        const { blob, datetime } = types(client.dialect)
        const taskColumns = [
          '\ttask_id VARCHAR(155)',
          '\tstatus VARCHAR(50)',
          `\tresult ${blob}`,
          `\tdate_done ${datetime}`,
          '\ttraceback TEXT',
          '\tname VARCHAR(155)',
          `\targs ${blob}`,
          `\tkwargs ${blob}`,
          '\tworker VARCHAR(155)',
          '\tretries INTEGER',
          '\tqueue VARCHAR(155)',
        ].join(', \n')
        const groupColumns = ['\ttaskset_id VARCHAR(155)', `\tresult ${blob}`, `\tdate_done ${datetime}`].join(', \n')
        for (const sql of [
          ...ddl(client, this.taskTable, this.taskSequence, taskColumns, 'task_id'),
          ...ddl(client, this.groupTable, this.groupSequence, groupColumns, 'taskset_id'),
        ]) {
          try {
            await client.query(sql)
          } catch (error) {
            // Two processes creating at once: the loser's "already exists" is the outcome it wanted.
            if (!/already exists|duplicate key/i.test((error as Error).message)) throw error
          }
        }
      } catch (error) {
        await client?.close().catch(() => undefined)
        // A driver the project has not installed is its own line (what to install), not a backend outage.
        if (error instanceof MissingPackageError) throw error
        throw new BrokerConnectionError(`cannot use result backend ${this.displayUrl}: ${(error as Error).message}`, { cause: error })
      }
      return client!
    })()
    this.client.catch(() => {
      this.client = undefined
    })
    return this.client
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    const client = await this.ready()
    const rows = await client.query(`SELECT task_id, ${TASK_COLUMNS.join(', ')} FROM ${this.taskTable} WHERE task_id = ?`, [taskId])
    const row = rows[0]
    return row ? this.metaFromRow(row) : null
  }

  private metaFromRow(row: Row): ResultMeta {
    const raw = bytesOf(row.result)
    const jsonText = (v: unknown) => {
      const b = bytesOf(v)
      // The call's args and kwargs as sent (ints beyond 2^53, floats like 2.0), for an exact re-send.
      if (b === null) return null
      const text = b.toString('utf8')
      checkJsonText(text, 'result args')
      return loads(text, { integers: 'exact', floats: 'pyfloat' })
    }
    const meta: ResultMeta = {
      status: String(row.status ?? 'PENDING'),
      result: raw === null || raw.length === 0 ? null : plain(loadsPickle(raw)),
      traceback: typeof row.traceback === 'string' ? row.traceback : null,
      children: [],
      date_done: isoDateTime(row.date_done),
      task_id: String(row.task_id),
    }
    if (row.name !== null && row.name !== undefined) {
      Object.assign(meta, {
        name: row.name,
        args: jsonText(row.args),
        kwargs: jsonText(row.kwargs),
        worker: row.worker ?? null,
        retries: row.retries === null ? null : Number(row.retries),
        queue: row.queue ?? null,
      })
    }
    return meta
  }

  waitReady(taskId: string, timeoutMs?: number): Promise<ResultMeta> {
    return pollUntilReady((id) => this.get(id), taskId, timeoutMs, POLL_MS)
  }

  async store(taskId: string, meta: string | Uint8Array, status: string): Promise<void> {
    const client = await this.ready()
    const value = metaRecord(meta)
    const existing = await client.query(`SELECT status FROM ${this.taskTable} WHERE task_id = ?`, [taskId])
    if (keepsStoredSuccess(existing[0]?.status, status)) return
    const extended = 'name' in value
    // Celery's _update_result: every column from the meta, None where it has no value.
    const columns: Record<(typeof TASK_COLUMNS)[number], unknown> = {
      status,
      result: dumpsPickle(pickledResult(status, value.result ?? null)),
      date_done: sqlDateTime(value.date_done as string | null),
      traceback: value.traceback ?? null,
      name: extended ? (value.name ?? null) : null,
      args: extended && value.args !== undefined ? Buffer.from(dumps(value.args), 'utf8') : null,
      kwargs: extended && value.kwargs !== undefined ? Buffer.from(dumps(value.kwargs), 'utf8') : null,
      worker: extended ? (value.worker ?? null) : null,
      retries: extended ? (value.retries ?? null) : null,
      queue: extended ? (value.queue ?? null) : null,
    }
    const names = Object.keys(columns)
    const params = Object.values(columns)
    if (existing.length) {
      await client.query(`UPDATE ${this.taskTable} SET ${names.map((n) => `${n} = ?`).join(', ')} WHERE task_id = ?`, [...params, taskId])
      return
    }
    const insert = client.sequences
      ? `INSERT INTO ${this.taskTable} (id, task_id, ${names.join(', ')}) VALUES (${nextval(client, this.taskSequence)}, ?, ${names.map(() => '?').join(', ')})`
      : `INSERT INTO ${this.taskTable} (task_id, ${names.join(', ')}) VALUES (?, ${names.map(() => '?').join(', ')})`
    try {
      await client.query(insert, [taskId, ...params])
    } catch (error) {
      // Another writer inserted the row first (a STARTED state racing the result): update it instead.
      if (!/duplicate|unique/i.test((error as Error).message)) throw error
      await client.query(`UPDATE ${this.taskTable} SET ${names.map((n) => `${n} = ?`).join(', ')} WHERE task_id = ?`, [...params, taskId])
    }
  }

  async forget(taskId: string): Promise<void> {
    const client = await this.ready()
    await client.query(`DELETE FROM ${this.taskTable} WHERE task_id = ?`, [taskId])
  }

  /** Celery's _save_group: a GroupResult pickle that Python's GroupResult.restore() reads. */
  async saveGroup(groupId: string, taskIds: string[]): Promise<void> {
    const client = await this.ready()
    const now = sqlDateTime(isoformatUtc(new Date(), ''))
    const blob = dumpsGroupPickle(groupId, taskIds)
    const insert = client.sequences
      ? `INSERT INTO ${this.groupTable} (id, taskset_id, result, date_done) VALUES (${nextval(client, this.groupSequence)}, ?, ?, ?)`
      : `INSERT INTO ${this.groupTable} (taskset_id, result, date_done) VALUES (?, ?, ?)`
    await client.query(insert, [groupId, blob, now])
  }

  /** The member ids of a saved group, or null; a pickle of any other shape is refused. */
  async restoreGroup(groupId: string): Promise<string[] | null> {
    const client = await this.ready()
    const rows = await client.query(`SELECT result FROM ${this.groupTable} WHERE taskset_id = ?`, [groupId])
    const raw = bytesOf(rows[0]?.result)
    return raw ? loadsGroupPickle(raw).taskIds : null
  }

  async deleteGroup(groupId: string): Promise<void> {
    const client = await this.ready()
    await client.query(`DELETE FROM ${this.groupTable} WHERE taskset_id = ?`, [groupId])
  }

  failedStore(): FailedStore {
    this.failed ??= new SqlFailedStore(() => this.ready(), { table: this.taskTable, dateColumn: 'date_done', get: (id) => this.get(id) })
    return this.failed
  }

  private failed: FailedStore | undefined

  async close(): Promise<void> {
    const client = this.client
    this.client = undefined
    if (client) await (await client).close().catch(() => undefined)
  }
}
