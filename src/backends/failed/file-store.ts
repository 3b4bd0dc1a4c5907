// The inbox on the file:// result store: a kept message is a file in
// `failed-messages/` beside `results/`, written atomically, trimmed by age
// and count as each is added. The FAILURE results are the result files whose
// status says so.
import { randomUUID } from 'node:crypto'
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { decodeResultMeta, escapeSegment, type ResultMeta } from '../../protocol/index.js'
import { decodeKeptMessage, encodeKeptMessage, KEPT_MAX, KEPT_TTL_SECONDS, type KeptMessage } from './kept-message.js'
import { newestFirst, type FailedStore } from './store.js'

/** At most this many result files are read for one listing. */
const MAX_READ = 200_000

export class FileFailedStore implements FailedStore {
  private readonly dir: string

  constructor(
    brokerDir: string,
    private readonly resultsDir: string,
    private readonly ready: () => Promise<void>,
  ) {
    this.dir = join(brokerDir, 'failed-messages')
  }

  private path(taskId: string): string {
    return join(this.dir, `${escapeSegment(taskId, 'uri')}.json`)
  }

  async failures(limit: number): Promise<ResultMeta[]> {
    await this.ready()
    const out: ResultMeta[] = []
    const names = (await readdir(this.resultsDir)).filter((n) => n.endsWith('.json')).slice(0, MAX_READ)
    for (const name of names) {
      try {
        const meta = decodeResultMeta(await readFile(join(this.resultsDir, name), 'utf8'))
        if (meta.status === 'FAILURE') out.push(meta)
      } catch {
        // Removed meanwhile, or not a result: no failure to show.
      }
    }
    return newestFirst(out).slice(0, limit)
  }

  async keep(message: KeptMessage): Promise<void> {
    await this.ready()
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    const path = this.path(message.taskId)
    const temp = `${path}.${randomUUID()}.tmp`
    await writeFile(temp, encodeKeptMessage(message), { mode: 0o600 })
    await rename(temp, path)
    await this.trim()
  }

  /** Files past the TTL go, then the oldest past KEPT_MAX. */
  private async trim(): Promise<void> {
    const entries: { name: string; at: number }[] = []
    for (const name of await readdir(this.dir)) {
      if (!name.endsWith('.json')) continue
      const at = await stat(join(this.dir, name)).then(
        (s) => s.mtimeMs,
        () => null,
      )
      if (at !== null) entries.push({ name, at })
    }
    const cutoff = Date.now() - KEPT_TTL_SECONDS * 1000
    entries.sort((a, b) => b.at - a.at)
    for (const [i, e] of entries.entries()) if (e.at < cutoff || i >= KEPT_MAX) await rm(join(this.dir, e.name), { force: true })
  }

  async kept(taskId: string): Promise<KeptMessage | null> {
    await this.ready()
    try {
      const path = this.path(taskId)
      if ((await stat(path)).mtimeMs < Date.now() - KEPT_TTL_SECONDS * 1000) return null
      return decodeKeptMessage(await readFile(path, 'utf8'))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
  }

  async keptList(limit: number): Promise<KeptMessage[]> {
    await this.ready()
    let names: string[]
    try {
      names = (await readdir(this.dir)).filter((n) => n.endsWith('.json'))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    }
    const out: KeptMessage[] = []
    for (const name of names) {
      try {
        out.push(decodeKeptMessage(await readFile(join(this.dir, name), 'utf8')))
      } catch {
        // Removed meanwhile, or not one of ours.
      }
    }
    const cutoff = Date.now() - KEPT_TTL_SECONDS * 1000
    return out
      .filter((m) => Date.parse(m.failedAt) >= cutoff)
      .sort((a, b) => b.failedAt.localeCompare(a.failedAt))
      .slice(0, limit)
  }

  async drop(taskIds: readonly string[]): Promise<void> {
    await this.ready()
    for (const id of taskIds) await rm(this.path(id), { force: true })
  }
}
