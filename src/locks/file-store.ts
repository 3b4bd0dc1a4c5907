// Locks for the embedded file:// broker: one machine, many processes. Under
// <dir>/locks/: `<id>.lock` (the JSON record plus `expiresAt`), `<id>.token`
// (the fencing counter) and `<id>.mutex` (a directory: mkdir is atomic, so
// every acquire, renewal and release of one id happens one at a time); `once`
// marks as `<id>.once` ({taskId, expiresAt}) under the same mutex.
import { mkdir, readdir, readFile, rm, rmdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { escapeSegment, unescapeSegment } from '../protocol/index.js'
import { ensurePrivateDir, replaceFile } from '../transport/index.js'
import { recordOf } from './lock.js'
import type { AcquireResult, HolderInfo, LockListing, LockRecord, LockStore, MarkResult } from './lock.js'

/** A mutex directory older than this was left by a process that died inside it. */
const STALE_MUTEX_MS = 5000

interface StoredLock extends LockRecord {
  expiresAt: number
}

export class FileLockStore implements LockStore {
  readonly kind = 'file' as const
  readonly dir: string
  private readonly root: string
  private opened: Promise<void> | undefined

  constructor(url: string) {
    this.root = decodeURIComponent(url.slice('file://'.length)) || '.'
    this.dir = join(this.root, 'locks')
  }

  // A lock id is any string; escaped, it names one file inside locks/ (never `..`, never a separator).
  private path(id: string, ext: string): string {
    return join(this.dir, `${escapeSegment(id, 'uri')}.${ext}`)
  }

  /** The folders, checked once: private, ours, not writable by others (others could forge or steal locks). */
  private open(): Promise<void> {
    this.opened ??= (async () => {
      // `file://` alone keeps locks/ in the working folder, which is the user's, not ours to tighten.
      if (this.root !== '.') await ensurePrivateDir(this.root, 'file:// lock store')
      await ensurePrivateDir(this.dir, 'file:// lock store')
    })().catch((error: unknown) => {
      this.opened = undefined
      throw error
    })
    return this.opened
  }

  /** Runs `fn` holding the mutex of `id`: the dedup document's (dedup/document-store.ts) too. */
  async withMutex<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const mutex = this.path(id, 'mutex')
    await this.open()
    for (let attempt = 0; ; attempt++) {
      try {
        await mkdir(mutex, { mode: 0o700 })
        break
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'ENOENT') {
          this.opened = undefined
          await this.open()
          continue
        }
        if (code !== 'EEXIST') throw error
        try {
          if (Date.now() - (await stat(mutex)).mtimeMs > STALE_MUTEX_MS) await rmdir(mutex)
        } catch {
          // Gone meanwhile: try again.
        }
        await new Promise((r) => setTimeout(r, Math.min(1 + attempt, 10)))
      }
    }
    try {
      return await fn()
    } finally {
      await rmdir(mutex).catch(() => undefined)
    }
  }

  private async read(id: string): Promise<StoredLock | null> {
    try {
      return JSON.parse(await readFile(this.path(id, 'lock'), 'utf8')) as StoredLock
    } catch {
      return null
    }
  }

  private async write(path: string, text: string): Promise<void> {
    await replaceFile(`${path}.${process.pid}.tmp`, path, text)
  }

  acquire(id: string, leaseMs: number, who: HolderInfo): Promise<AcquireResult> {
    return this.withMutex(id, async () => {
      const now = Date.now()
      const current = await this.read(id)
      if (current && current.expiresAt > now) return { acquired: false, remainingMs: current.expiresAt - now }
      const last = Number(await readFile(this.path(id, 'token'), 'utf8').catch(() => '0')) || 0
      const token = last + 1
      await this.write(this.path(id, 'token'), String(token))
      const record: LockRecord = { ...recordOf(id, who, leaseMs, now), token }
      await this.write(this.path(id, 'lock'), JSON.stringify({ ...record, expiresAt: now + leaseMs }))
      return { acquired: true, record }
    })
  }

  private holds(current: StoredLock | null, record: LockRecord): current is StoredLock {
    return current !== null && current.token === record.token && current.holder === record.holder && current.expiresAt > Date.now()
  }

  renew(record: LockRecord): Promise<boolean> {
    return this.withMutex(record.id, async () => {
      const current = await this.read(record.id)
      if (!this.holds(current, record)) return false
      await this.write(this.path(record.id, 'lock'), JSON.stringify({ ...current, expiresAt: Date.now() + record.leaseMs }))
      return true
    })
  }

  release(record: LockRecord): Promise<boolean> {
    return this.withMutex(record.id, async () => {
      if (!this.holds(await this.read(record.id), record)) return false
      await rm(this.path(record.id, 'lock'), { force: true })
      return true
    })
  }

  async releaseHolder(holder: string): Promise<string[]> {
    const freed: string[] = []
    for (const lock of await this.list()) {
      if (lock.holder !== holder) continue
      const done = await this.withMutex(lock.id, async () => {
        const current = await this.read(lock.id)
        if (!current || current.holder !== holder || current.token !== lock.token) return false
        await rm(this.path(lock.id, 'lock'), { force: true })
        return true
      })
      if (done) freed.push(lock.id)
    }
    return freed
  }

  async list(): Promise<LockListing[]> {
    await this.open()
    const names = await readdir(this.dir).catch(() => [] as string[])
    const ids = names
      .filter((n) => n.endsWith('.lock'))
      .flatMap((n) => {
        try {
          return [unescapeSegment(n.slice(0, -'.lock'.length))]
        } catch {
          return [] // not a name this store wrote
        }
      })
    const found = await Promise.all(ids.map((id) => this.get(id)))
    return found.filter((r): r is LockListing => r !== null).sort((a, b) => a.id.localeCompare(b.id))
  }

  async get(id: string): Promise<LockListing | null> {
    await this.open()
    const current = await this.read(id)
    if (!current) return null
    const leftMs = current.expiresAt - Date.now()
    if (leftMs <= 0) return null
    const { expiresAt: _expires, ...record } = current
    return { ...record, leftMs }
  }

  remove(id: string): Promise<boolean> {
    return this.withMutex(id, async () => {
      const had = (await this.read(id)) !== null
      await rm(this.path(id, 'lock'), { force: true })
      return had
    })
  }

  mark(id: string, taskId: string, ttlMs: number): Promise<MarkResult> {
    return this.withMutex(id, async () => {
      const now = Date.now()
      const current = await this.readMark(id)
      if (current && current.expiresAt > now) return { set: false, taskId: current.taskId, remainingMs: current.expiresAt - now }
      await this.write(this.path(id, 'once'), JSON.stringify({ taskId, expiresAt: now + ttlMs }))
      return { set: true }
    })
  }

  unmark(id: string, taskId: string): Promise<boolean> {
    return this.withMutex(id, async () => {
      if ((await this.readMark(id))?.taskId !== taskId) return false
      await rm(this.path(id, 'once'), { force: true })
      return true
    })
  }

  private async readMark(id: string): Promise<{ taskId: string; expiresAt: number } | null> {
    try {
      return JSON.parse(await readFile(this.path(id, 'once'), 'utf8')) as { taskId: string; expiresAt: number }
    } catch {
      return null
    }
  }

  async close(): Promise<void> {}
}
