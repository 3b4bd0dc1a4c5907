// The embedded result store beside the file:// broker: one JSON file per task,
// written by atomic rename so a reader never sees half a result.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { decodeResultMeta, type ResultMeta } from '../../protocol/index.js'
import { READY, ResultTimeoutError, type ResultBackend } from './backend.js'

const POLL_MS = 50

export class FileResultBackend implements ResultBackend {
  readonly displayUrl: string
  private readonly dir: string

  constructor(brokerDir: string) {
    this.dir = join(brokerDir, 'results')
    this.displayUrl = `file://${brokerDir}`
  }

  private path(taskId: string): string {
    return join(this.dir, `${encodeURIComponent(taskId)}.json`)
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    try {
      return decodeResultMeta(await readFile(this.path(taskId), 'utf8'))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
  }

  async waitReady(taskId: string, timeoutMs?: number): Promise<ResultMeta> {
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs
    for (;;) {
      const meta = await this.get(taskId)
      if (meta && READY.has(meta.status)) return meta
      if (Date.now() >= deadline) throw new ResultTimeoutError(taskId, (timeoutMs ?? 0) / 1000)
      await new Promise((r) => setTimeout(r, POLL_MS))
    }
  }

  async store(taskId: string, metaJson: string, status: string): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    if (status !== 'SUCCESS') {
      const existing = await this.get(taskId).catch(() => null)
      if (existing?.status === 'SUCCESS') return
    }
    const tmp = `${this.path(taskId)}.${process.pid}.${Date.now()}.tmp`
    await writeFile(tmp, metaJson)
    await rename(tmp, this.path(taskId))
  }

  async close(): Promise<void> {}
}
