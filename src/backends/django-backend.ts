// django-celery-results' `django-db` backend (django_celery_results/backends/
// database.py) on its own tables, which `manage.py migrate` creates:
// django_celery_results_taskresult and django_celery_results_groupresult. The
// result is serialized text with its content type and encoding beside it
// (JSON by default; base64 when the serializer's encoding is binary), as the
// Django admin shows it. tsq never creates these tables: they belong to the
// Django project's migrations.
import {
  argsRepr,
  checkJsonText,
  decodeBody,
  dumps,
  isoformatUtc,
  kwargsRepr,
  loads,
  MissingPackageError,
  type ResultMeta,
} from '../protocol/index.js'
import { BrokerConnectionError, maskUrl } from '../transport/index.js'
import { keepsStoredSuccess, pollUntilReady, UnsupportedBackendError, type ResultBackend } from './backend.js'
import { JSON_RESULTS, type ResultCodec } from './result-codec.js'
import { SqlFailedStore, type FailedStore } from './failed/index.js'
import { isMissingTable, metaRecord, openSqlClient, type Row, type SqlClient } from './sql-client.js'

const TASKS = 'django_celery_results_taskresult'
const GROUPS = 'django_celery_results_groupresult'
const POLL_MS = 200

/** Accepted content types when reading rows Python wrote (result_accept_content's defaults plus tsq's serializers). */
const ACCEPT = new Set(['application/json', 'application/x-msgpack', 'application/x-yaml'])

/** DateTimeField with USE_TZ: timestamptz on PostgreSQL, naive UTC elsewhere. */
function djangoNow(client: SqlClient): string {
  const iso = isoformatUtc(new Date(), '')
  return client.dialect === 'postgresql' ? `${iso}+00:00` : iso.replace('T', ' ')
}

function isoOf(value: unknown): string | null {
  if (value === null || value === undefined) return null
  if (value instanceof Date) return isoformatUtc(value, '')
  return String(value)
    .replace(' ', 'T')
    .replace(/(\+00(:00)?|Z)$/, '')
}

export class DjangoResultBackend implements ResultBackend {
  readonly displayUrl: string
  readonly codec: ResultCodec = JSON_RESULTS
  readonly chordUnlock = true
  private client: Promise<SqlClient> | undefined

  /** `databaseUrl`: the Django project's database as an SQLAlchemy-style URL (database_url / DATABASE_URL). */
  constructor(private readonly databaseUrl: string | undefined) {
    if (!databaseUrl)
      throw new UnsupportedBackendError(
        'the django-db result backend needs the Django database: set database_url in the config, or DATABASE_URL (e.g. postgresql://user@host/db)',
      )
    this.displayUrl = `django-db (${maskUrl(databaseUrl)})`
  }

  private ready(): Promise<SqlClient> {
    this.client ??= (async () => {
      let client: SqlClient | undefined
      try {
        client = await openSqlClient(this.databaseUrl!)
        await client.query(`SELECT 1 FROM ${TASKS} WHERE 1 = 0`)
        return client
      } catch (error) {
        await client?.close().catch(() => undefined)
        // A driver the project has not installed is its own line (what to install), not a backend outage.
        if (error instanceof MissingPackageError) throw error
        const missing = isMissingTable(error)
        throw new BrokerConnectionError(
          `cannot use result backend ${this.displayUrl}: ${missing ? `${TASKS} is missing (run the Django project's \`manage.py migrate\`)` : (error as Error).message}`,
          { cause: error },
        )
      }
    })()
    this.client.catch(() => {
      this.client = undefined
    })
    return this.client
  }

  private decodeContent(row: Row, content: unknown): unknown {
    if (content === null || content === undefined || content === '') return null
    const text = Buffer.isBuffer(content) ? content.toString('utf8') : String(content)
    const type = String(row.content_type || 'application/json')
    if (row.content_encoding === 'binary') return decodeBody(Buffer.from(text, 'base64'), type, 'binary', { accept: ACCEPT }, 'result')
    if (type === 'application/json') {
      checkJsonText(text, 'result')
      return loads(text, { integers: 'exact' })
    }
    return decodeBody(text, type, String(row.content_encoding || 'utf-8'), { accept: ACCEPT }, 'result')
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    const client = await this.ready()
    const [row] = await client.query(`SELECT * FROM ${TASKS} WHERE task_id = ?`, [taskId])
    if (!row) return null
    const meta = (this.decodeContent(row, row.meta) ?? {}) as Record<string, unknown>
    const taskArgs = this.decodeContent(row, row.task_args)
    const taskKwargs = this.decodeContent(row, row.task_kwargs)
    return {
      ...meta,
      status: String(row.status),
      result: this.decodeContent(row, row.result),
      traceback: typeof row.traceback === 'string' ? row.traceback : null,
      children: Array.isArray(meta.children) ? meta.children : [],
      date_done: isoOf(row.date_done),
      task_id: String(row.task_id),
      name: row.task_name ?? null,
      args: taskArgs,
      kwargs: taskKwargs,
      worker: row.worker ?? null,
    }
  }

  waitReady(taskId: string, timeoutMs?: number): Promise<ResultMeta> {
    return pollUntilReady((id) => this.get(id), taskId, timeoutMs, POLL_MS)
  }

  async store(taskId: string, meta: string | Uint8Array, status: string): Promise<void> {
    const client = await this.ready()
    const value = metaRecord(meta)
    const [existing] = await client.query(`SELECT status FROM ${TASKS} WHERE task_id = ?`, [taskId])
    if (keepsStoredSuccess(existing?.status, status)) return
    const extended = 'name' in value
    const now = djangoNow(client)
    // TaskResultManager.store_result's fields; task_args/kwargs are the JSON of argsrepr/kwargsrepr, as the package writes them.
    const fields: Record<string, unknown> = {
      status,
      result: dumps(value.result ?? null),
      traceback: value.traceback ?? null,
      meta: dumps({ children: value.children ?? [] }),
      content_encoding: 'utf-8',
      content_type: 'application/json',
      periodic_task_name: null,
      task_name: extended ? (value.name ?? null) : null,
      task_args: extended && Array.isArray(value.args) ? dumps(argsRepr(value.args)) : null,
      task_kwargs:
        extended && value.kwargs && typeof value.kwargs === 'object' ? dumps(kwargsRepr(value.kwargs as Record<string, unknown>)) : null,
      worker: extended ? (value.worker ?? null) : null,
      date_done: now,
    }
    const names = Object.keys(fields)
    const update = () =>
      client.query(`UPDATE ${TASKS} SET ${names.map((n) => `${n} = ?`).join(', ')} WHERE task_id = ?`, [...Object.values(fields), taskId])
    if (existing) {
      await update()
      return
    }
    try {
      await client.query(
        `INSERT INTO ${TASKS} (task_id, date_created, ${names.join(', ')}) VALUES (?, ?, ${names.map(() => '?').join(', ')})`,
        [taskId, now, ...Object.values(fields)],
      )
    } catch (error) {
      if (!/duplicate|unique/i.test((error as Error).message)) throw error
      await update()
    }
  }

  async forget(taskId: string): Promise<void> {
    const client = await this.ready()
    await client.query(`DELETE FROM ${TASKS} WHERE task_id = ?`, [taskId])
  }

  /** GroupResultManager.store_group_result: the group's as_tuple() as JSON. */
  async saveGroup(groupId: string, taskIds: string[]): Promise<void> {
    const client = await this.ready()
    const now = djangoNow(client)
    const result = dumps([[groupId, null], taskIds.map((id) => [[id, null], null])])
    await client.query(
      `INSERT INTO ${GROUPS} (group_id, date_created, date_done, content_type, content_encoding, result) VALUES (?, ?, ?, 'application/json', 'utf-8', ?)`,
      [groupId, now, now, result],
    )
  }

  async restoreGroup(groupId: string): Promise<string[] | null> {
    const client = await this.ready()
    const [row] = await client.query(`SELECT * FROM ${GROUPS} WHERE group_id = ?`, [groupId])
    if (!row) return null
    const tuple = this.decodeContent(row, row.result) as [unknown, Array<[[string, unknown], unknown]>] | null
    return Array.isArray(tuple?.[1]) ? tuple[1].map((member) => String(member[0][0])) : null
  }

  failedStore(): FailedStore {
    this.failed ??= new SqlFailedStore(() => this.ready(), { table: TASKS, dateColumn: 'date_done', get: (id) => this.get(id) })
    return this.failed
  }

  private failed: FailedStore | undefined

  async close(): Promise<void> {
    const client = this.client
    this.client = undefined
    if (client) await (await client).close().catch(() => undefined)
  }
}
