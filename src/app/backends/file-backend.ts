// The embedded result store beside the file:// broker: one JSON file per task,
// written by atomic rename so a reader never sees half a result.
import { mkdir, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { decodeResultMeta, type ResultMeta } from '../../protocol/index.js'
import { pollUntilReady, type ResultBackend } from './backend.js'

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

  async forget(taskId: string): Promise<void> {
    await rm(this.path(taskId), { force: true })
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    try {
      return decodeResultMeta(await readFile(this.path(taskId), 'utf8'))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
  }

  waitReady(taskId: string, timeoutMs?: number): Promise<ResultMeta> {
    return pollUntilReady((id) => this.get(id), taskId, timeoutMs, POLL_MS)
  }

  async store(taskId: string, metaJson: string, status: string): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    if (status !== 'SUCCESS') {
      const existing = await this.get(taskId).catch(() => null)
      if (existing?.status === 'SUCCESS') return
    }
    await writeAtomically(this.path(taskId), metaJson)
  }

  // Chords on the embedded store (spec §2.3 keeps them in Redis): a directory
  // per chord with its size and one file per finished header task, named so
  // that names sort in group order. Every part counts the files after writing
  // its own, so the last to write sees them all; of the parts that do, the
  // one whose exclusive create of `done` succeeds sends the body.

  private chordDir(groupId: string): string {
    return join(this.dir, 'chords', encodeURIComponent(groupId))
  }

  async setChordSize(groupId: string, size: number): Promise<void> {
    const dir = this.chordDir(groupId)
    await mkdir(dir, { recursive: true })
    await writeAtomically(join(dir, 'size'), String(size))
  }

  async chordPartReturn(groupId: string, groupIndex: number | null, part: string, taskId?: string): Promise<string[] | null> {
    const dir = this.chordDir(groupId)
    // The size is set before any header task is sent, and the directory goes
    // when the chord completes: without it, this part is a redelivered one of a
    // chord already done (its body sent), and writing it would only leave a
    // directory behind that nothing removes.
    let size: number
    try {
      size = Number(await readFile(join(dir, 'size'), 'utf8'))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
    // A task that ends twice (redelivered after a lost worker) replaces its part, as a zset member would.
    const index = String(groupIndex ?? Number.MAX_SAFE_INTEGER).padStart(16, '0')
    try {
      await writeAtomically(join(dir, `${index}-${encodeURIComponent(taskId ?? randomUUID())}.part`), part)
    } catch (error) {
      // Completed (and removed) between reading the size and writing this part.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
    const names = (await readdir(dir)).filter((n) => n.endsWith('.part')).sort()
    if (names.length !== size) return null
    try {
      await (await open(join(dir, 'done'), 'wx')).close()
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null
      throw error
    }
    try {
      return await Promise.all(names.map((n) => readFile(join(dir, n), 'utf8')))
    } finally {
      // A late part written meanwhile can make removal fail; the body must still go.
      await rm(dir, { recursive: true, force: true }).catch(() => undefined)
    }
  }

  async close(): Promise<void> {}
}

/** Write then rename: a reader sees the old file or the whole new one, never half. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`
  await writeFile(tmp, text)
  await rename(tmp, path)
}
