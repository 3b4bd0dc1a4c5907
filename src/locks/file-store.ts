// Locks for the embedded file:// broker: one machine, many processes. Under
// <dir>/locks/: `<id>.lock` (the JSON record plus `expiresAt`), `<id>.token`
// (the fencing counter) and `<id>.mutex` (a directory: mkdir is atomic, so
// every acquire, renewal and release of one id happens one at a time); `once`
// marks as `<id>.once` ({taskId, expiresAt}) under the same mutex.
import { mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { holderOf, type AcquireResult, type HolderInfo, type LockListing, type LockRecord, type LockStore, type MarkResult } from './lock.js'

/** A mutex directory older than this was left by a process that died inside it. */
const STALE_MUTEX_MS = 5000

interface StoredLock extends LockRecord {
  expiresAt: number
}

export class FileLockStore implements LockStore {
  readonly kind = 'file' as const
  readonly dir: string

  constructor(url: string) {
    this.dir = join(decodeURIComponent(url.slice('file://'.length)) || '.', 'locks')
  }

  private path(id: string, ext: string): string {
    return join(this.dir, `${encodeURIComponent(id)}.${ext}`)
  }

  private async withMutex<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const mutex = this.path(id, 'mutex')
    for (let attempt = 0; ; attempt++) {
      try {
        await mkdir(mutex)
        break
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'ENOENT') {
          await mkdir(this.dir, { recursive: true })
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
    const tmp = `${path}.${process.pid}.tmp`
    await writeFile(tmp, text)
    await rename(tmp, path)
  }

  acquire(id: string, leaseMs: number, who: HolderInfo): Promise<AcquireResult> {
    return this.withMutex(id, async () => {
      const now = Date.now()
      const current = await this.read(id)
      if (current && current.expiresAt > now) return { acquired: false, remainingMs: current.expiresAt - now }
      const last = Number(await readFile(this.path(id, 'token'), 'utf8').catch(() => '0')) || 0
      const token = last + 1
      await this.write(this.path(id, 'token'), String(token))
      const record: LockRecord = { id, token, holder: holderOf(who), node: who.node, pid: who.pid, task: who.task, taskId: who.taskId, acquiredAt: now, leaseMs }
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
    const names = await readdir(this.dir).catch(() => [] as string[])
    const found = await Promise.all(names.filter((n) => n.endsWith('.lock')).map((n) => this.get(decodeURIComponent(n.slice(0, -'.lock'.length)))))
    return found.filter((r): r is LockListing => r !== null).sort((a, b) => a.id.localeCompare(b.id))
  }

  async get(id: string): Promise<LockListing | null> {
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
