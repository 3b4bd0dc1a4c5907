// The inbox on an SQL result backend (db+ and django-db): kept messages in a
// table of tsq's own, tsq_failed_message (created when missing, in the same
// database), trimmed by age and count as each is added. The FAILURE results
// are the backend's own rows, found by status.
import type { ResultMeta } from '../../protocol/index.js'
import type { SqlClient } from '../sql-client.js'
import { decodeKeptMessage, encodeKeptMessage, KEPT_MAX, KEPT_TTL_SECONDS, type KeptMessage } from './kept-message.js'
import type { FailedStore } from './store.js'

const TABLE = 'tsq_failed_message'

export interface SqlFailureSource {
  /** The backend's table of task results and the column its finish time is in. */
  table: string
  dateColumn: string
  get(taskId: string): Promise<ResultMeta | null>
}

export class SqlFailedStore implements FailedStore {
  private created: Promise<SqlClient> | undefined

  constructor(
    private readonly client: () => Promise<SqlClient>,
    private readonly source: SqlFailureSource,
  ) {}

  private ready(): Promise<SqlClient> {
    this.created ??= (async () => {
      const client = await this.client()
      const text = client.dialect === 'mysql' ? 'MEDIUMTEXT' : 'TEXT'
      try {
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${TABLE} (task_id VARCHAR(155) NOT NULL PRIMARY KEY, failed_at BIGINT NOT NULL, record ${text} NOT NULL)`,
        )
      } catch (error) {
        // Two processes creating at once: the loser's "already exists" is the outcome it wanted.
        if (!/already exists|duplicate key/i.test((error as Error).message)) throw error
      }
      return client
    })()
    this.created.catch(() => {
      this.created = undefined
    })
    return this.created
  }

  async failures(limit: number): Promise<ResultMeta[]> {
    const client = await this.client()
    const { table, dateColumn } = this.source
    const rows = await client.query(
      `SELECT task_id FROM ${table} WHERE status = 'FAILURE' ORDER BY ${dateColumn} DESC LIMIT ${Math.max(0, Math.floor(limit))}`,
    )
    const out: ResultMeta[] = []
    for (const row of rows) {
      const meta = await this.source.get(String(row.task_id))
      if (meta?.status === 'FAILURE') out.push(meta)
    }
    return out
  }

  async keep(message: KeptMessage): Promise<void> {
    const client = await this.ready()
    const at = Date.parse(message.failedAt) || Date.now()
    await client.execute(`DELETE FROM ${TABLE} WHERE task_id = ?`, [message.taskId])
    await client.execute(`INSERT INTO ${TABLE} (task_id, failed_at, record) VALUES (?, ?, ?)`, [
      message.taskId,
      at,
      encodeKeptMessage(message),
    ])
    await client.execute(`DELETE FROM ${TABLE} WHERE failed_at < ?`, [at - KEPT_TTL_SECONDS * 1000])
    const [row] = await client.query(`SELECT COUNT(*) AS n FROM ${TABLE}`)
    const excess = Number(row?.n ?? 0) - KEPT_MAX
    if (excess > 0) {
      const oldest = await client.query(`SELECT task_id FROM ${TABLE} ORDER BY failed_at ASC LIMIT ${excess}`)
      await this.drop(oldest.map((r) => String(r.task_id)))
    }
  }

  async kept(taskId: string): Promise<KeptMessage | null> {
    const client = await this.ready()
    const [row] = await client.query(`SELECT record, failed_at FROM ${TABLE} WHERE task_id = ?`, [taskId])
    return row && this.live(row.failed_at) ? decodeKeptMessage(String(row.record)) : null
  }

  async keptList(limit: number): Promise<KeptMessage[]> {
    const client = await this.ready()
    const rows = await client.query(
      `SELECT record, failed_at FROM ${TABLE} WHERE failed_at >= ? ORDER BY failed_at DESC LIMIT ${Math.max(0, Math.floor(limit))}`,
      [Date.now() - KEPT_TTL_SECONDS * 1000],
    )
    const out: KeptMessage[] = []
    for (const row of rows) {
      try {
        out.push(decodeKeptMessage(String(row.record)))
      } catch {
        // Not one of ours: left out.
      }
    }
    return out
  }

  async drop(taskIds: readonly string[]): Promise<void> {
    if (taskIds.length === 0) return
    const client = await this.ready()
    for (const id of taskIds) await client.execute(`DELETE FROM ${TABLE} WHERE task_id = ?`, [id])
  }

  /** A row past its TTL that no keep() has trimmed yet reads as gone, as an expired Redis key. */
  private live(failedAt: unknown): boolean {
    return Number(failedAt) >= Date.now() - KEPT_TTL_SECONDS * 1000
  }
}
