// The embedded result store beside the file:// broker: one JSON file per task,
// written by atomic rename so a reader never sees half a result. Task and group
// ids become file names through escapeSegment, so no id names a path outside
// results/ (`..` would otherwise be results/ itself).
import { mkdir, open, readdir, readFile, rm } from 'node:fs/promises'
import { randomBytes, randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { checkJsonText, decodeResultMeta, dumps, escapeSegment, loads, type ResultMeta } from '../protocol/index.js'
import { ensurePrivateDir, PRIVATE_DIR_MODE, replaceFile } from '../transport/index.js'
import { FileFailedStore, type FailedStore } from './failed/index.js'
import { pollUntilReady, type ResultBackend } from './backend.js'

const POLL_MS = 50
/** Pauses between the tries of a result write that fails (a full disk may be freed meanwhile). */
export const STORE_RETRY_DELAYS_MS: readonly number[] = [250, 500, 1000, 2000, 4000]
/** Failures that may pass; any other (EACCES, ENOENT, ENAMETOOLONG) is given to the caller at once. */
const TRANSIENT = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EAGAIN', 'EBUSY', 'EMFILE', 'ENFILE', 'EINTR'])

export interface FileResultBackendOptions {
  retryDelaysMs?: readonly number[]
  /** Called before each new try of a failed write. */
  onRetry?: (taskId: string, attempt: number, error: Error) => void
}

export class FileResultBackend implements ResultBackend {
  readonly displayUrl: string
  private readonly dir: string
  private opened: Promise<void> | undefined

  constructor(
    private readonly brokerDir: string,
    private readonly options: FileResultBackendOptions = {},
  ) {
    this.dir = join(brokerDir, 'results')
    this.displayUrl = `file://${brokerDir}`
  }

  /** The store's folders, checked once: private, ours, not writable by others. */
  ready(): Promise<void> {
    this.opened ??= (async () => {
      await ensurePrivateDir(this.brokerDir, 'file:// result store')
      await ensurePrivateDir(this.dir, 'file:// result store')
    })().catch((error: unknown) => {
      this.opened = undefined
      throw error
    })
    return this.opened
  }

  private path(taskId: string): string {
    return join(this.dir, `${escapeSegment(taskId, 'uri')}.json`)
  }

  async forget(taskId: string): Promise<void> {
    await this.ready()
    await rm(this.path(taskId), { force: true })
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    await this.ready()
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
    const path = this.path(taskId)
    await this.ready()
    if (status !== 'SUCCESS') {
      const existing = await this.get(taskId).catch(() => null)
      if (existing?.status === 'SUCCESS') return
    }
    await this.write(taskId, path, metaJson)
  }

  /**
   * writeAtomically, tried again while the failure may pass (a full disk being
   * freed, an I/O hiccup) before the caller (the worker, which logs it) gets it.
   */
  private async write(taskId: string, path: string, text: string): Promise<void> {
    const delays = this.options.retryDelaysMs ?? STORE_RETRY_DELAYS_MS
    for (let attempt = 0; ; attempt++) {
      try {
        await writeAtomically(path, text)
        return
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (!TRANSIENT.has(code ?? '')) throw error
        if (attempt >= delays.length)
          throw Object.assign(new Error(`${(error as Error).message} (gave up after ${attempt + 1} tries)`), { code, cause: error })
        this.options.onRetry?.(taskId, attempt + 1, error as Error)
        await new Promise((r) => setTimeout(r, delays[attempt]))
      }
    }
  }

  // Chords on the embedded store (spec §2.3 keeps them in Redis): a directory
  // per chord with its size and one file per finished header task, named so
  // that names sort in group order. Every part counts the files after writing
  // its own, so the last to write sees them all; of the parts that do, the
  // one whose exclusive create of `done` succeeds sends the body.

  private chordDir(groupId: string): string {
    return join(this.dir, 'chords', escapeSegment(groupId, 'uri'))
  }

  async setChordSize(groupId: string, size: number): Promise<void> {
    const dir = this.chordDir(groupId)
    await this.ready()
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
    await this.write(groupId, join(dir, 'size'), String(size))
  }

  async chordPartReturn(groupId: string, groupIndex: number | null, part: string, taskId?: string): Promise<string[] | null> {
    const dir = this.chordDir(groupId)
    await this.ready()
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
      await this.write(taskId ?? groupId, join(dir, `${index}-${escapeSegment(taskId ?? randomUUID(), 'uri')}.part`), part)
    } catch (error) {
      // Completed (and removed) between reading the size and writing this part.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
    const names = (await readdir(dir)).filter((n) => n.endsWith('.part')).sort()
    if (names.length !== size) return null
    try {
      await (await open(join(dir, 'done'), 'wx', 0o600)).close()
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

  // A chord header saved whole (Celery's GroupResult.save), kept as results are.
  private groupPath(groupId: string): string {
    return join(this.dir, 'groups', `${escapeSegment(groupId, 'uri')}.json`)
  }

  async saveGroupResult(groupId: string, tuple: unknown[]): Promise<void> {
    await this.ready()
    await mkdir(join(this.dir, 'groups'), { recursive: true, mode: PRIVATE_DIR_MODE })
    await this.write(groupId, this.groupPath(groupId), dumps({ result: tuple }))
  }

  async restoreGroupResult(groupId: string): Promise<unknown> {
    await this.ready()
    let text: string
    try {
      text = await readFile(this.groupPath(groupId), 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
    checkJsonText(text, 'saved group')
    const value = loads(text)
    return value !== null && typeof value === 'object' && 'result' in value ? (value as { result: unknown }).result : null
  }

  failedStore(): FailedStore {
    this.failed ??= new FileFailedStore(this.brokerDir, this.dir, () => this.ready())
    return this.failed
  }

  private failed: FailedStore | undefined

  async close(): Promise<void> {}
}

/** Write then rename: a reader sees the old file or the whole new one, never half. */
async function writeAtomically(path: string, text: string): Promise<void> {
  await replaceFile(`${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`, path, text)
}
