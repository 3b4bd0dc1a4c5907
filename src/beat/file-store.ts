// The embedded store: one JSON file (`-s/--schedule`), so a fresh machine runs
// beat with no server and last run times survive a restart. Entries use the
// same RedBeat JSON as the Redis store. Every read-modify-write holds a lock
// file, so `tsq schedule` and several beats on one machine can share it.
import { closeSync, existsSync, openSync, readFileSync, statSync, unlinkSync, unwatchFile, watchFile, writeSync } from 'node:fs'
import { resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { checkJsonText, codedError, comparePyStr } from '../protocol/index.js'
import { ensurePrivateFileSync, replaceFileSync } from '../transport/index.js'
import { decodeDefinition, decodeMeta, dueAtOf, encodeDefinition, encodeMeta } from './entry.js'
import type { Entry, EntryDefinition, EntryMeta } from './entry.js'
import { reservedMeta } from './store.js'
import type { BeatStore, DueBatch, ReleaseRun, ReserveOutcome, ReserveRequest, ReserveRun } from './store.js'

export const DEFAULT_SCHEDULE_FILE = 'tsq-beat-schedule.json'

interface FileShape {
  version: 1
  statics: string[]
  entries: Record<string, { definition: unknown; meta: unknown }>
}

const STALE_LOCK_MS = 10_000
/** Bytes a schedule file may hold: thousands of entries fit in far less. */
const MAX_SCHEDULE_FILE_BYTES = 64 * 1024 * 1024

export class FileStoreError extends codedError('CANT_CREATE') {}

export class FileStore implements BeatStore {
  readonly kind = 'file' as const
  readonly location: string
  private cache: { mtimeMs: number; size: number; data: FileShape } | null = null

  constructor(
    readonly path: string,
    private readonly tz = 'UTC',
  ) {
    this.path = resolve(path)
    this.location = this.path
  }

  private read(): FileShape {
    if (!existsSync(this.path)) return { version: 1, statics: [], entries: {} }
    const st = statSync(this.path)
    if (this.cache && this.cache.mtimeMs === st.mtimeMs && this.cache.size === st.size) return this.cache.data
    let data: FileShape
    try {
      if (st.size > MAX_SCHEDULE_FILE_BYTES) throw new Error(`${st.size} bytes, over the limit of ${MAX_SCHEDULE_FILE_BYTES}`)
      const text = readFileSync(this.path, 'utf8')
      checkJsonText(text, 'schedule file', MAX_SCHEDULE_FILE_BYTES)
      data = JSON.parse(text) as FileShape
      if (!data || typeof data !== 'object' || Array.isArray(data)) throw new Error('not a JSON object')
    } catch (error) {
      throw new FileStoreError(`schedule file ${this.path} is not valid JSON (${(error as Error).message}); move it away to start afresh`)
    }
    data.entries ??= {}
    data.statics ??= []
    this.cache = { mtimeMs: st.mtimeMs, size: st.size, data }
    return data
  }

  private write(data: FileShape): void {
    replaceFileSync(`${this.path}.${process.pid}.tmp`, this.path, `${JSON.stringify(data, null, 1)}\n`)
    this.cache = null
  }

  private async locked<T>(fn: (data: FileShape) => T | Promise<T>): Promise<T> {
    const lock = `${this.path}.lock`
    // Checked before each write: the schedule says which tasks run, so it is private (0600) and ours.
    try {
      ensurePrivateFileSync(this.path, 'schedule file')
    } catch (error) {
      throw new FileStoreError((error as Error).message)
    }
    for (let attempt = 0; ; attempt++) {
      try {
        const fd = openSync(lock, 'wx', 0o600)
        writeSync(fd, String(process.pid))
        closeSync(fd)
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new FileStoreError(`cannot lock ${lock}: ${(error as Error).message}`)
        try {
          // A holder that died leaves its lock behind; take it over once it is old.
          if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) unlinkSync(lock)
        } catch {
          // Gone meanwhile: try again.
        }
        await sleep(Math.min(5 + attempt * 2, 50))
      }
    }
    try {
      this.cache = null
      return await fn(this.read())
    } finally {
      try {
        unlinkSync(lock)
      } catch {
        // Someone judged it stale; nothing to undo.
      }
    }
  }

  private entryOf(raw: { definition: unknown; meta: unknown }): Entry {
    return { definition: decodeDefinition(JSON.stringify(raw.definition)), meta: decodeMeta(JSON.stringify(raw.meta ?? {})) }
  }

  async due(now: number): Promise<DueBatch> {
    const entries: Entry[] = []
    let nextDueAt: number | null = null
    for (const raw of Object.values(this.read().entries)) {
      const e = this.entryOf(raw)
      if (!e.definition.enabled) continue
      const at = dueAtOf(e, this.tz, now)
      if (at <= now) entries.push(e)
      else nextDueAt = nextDueAt === null ? at : Math.min(nextDueAt, at)
    }
    return { entries, nextDueAt }
  }

  async reserve(r: ReserveRequest): Promise<ReserveOutcome> {
    const [outcome] = await this.reserveAll([r])
    return outcome!
  }

  /** One lock and one write for the whole batch. There is no lease over a file, so no fence. */
  async reserveAll(runs: ReserveRun[]): Promise<ReserveOutcome[]> {
    if (runs.length === 0) return []
    return this.locked((data) => {
      const outcomes = runs.map((r): ReserveOutcome => {
        const raw = data.entries[r.name]
        if (!raw) return 'gone'
        const e = this.entryOf(raw)
        if (!e.definition.enabled) return 'gone'
        if (e.meta.totalRunCount !== r.expectedCount) return 'stale'
        raw.meta = JSON.parse(encodeMeta(reservedMeta(r)))
        return 'ok'
      })
      if (outcomes.includes('ok')) this.write(data)
      return outcomes
    })
  }

  async release(runs: ReleaseRun[]): Promise<number> {
    if (runs.length === 0) return 0
    return this.locked((data) => {
      let n = 0
      for (const r of runs) {
        const raw = data.entries[r.name]
        if (!raw || JSON.stringify(raw.meta) !== encodeMeta(reservedMeta(r))) continue
        raw.meta = JSON.parse(encodeMeta(r.previous))
        n += 1
      }
      if (n) this.write(data)
      return n
    })
  }

  async reschedule(): Promise<void> {
    // The file has no separate index: due times are computed from each entry.
  }

  async get(name: string): Promise<Entry | null> {
    const raw = this.read().entries[name]
    return raw ? this.entryOf(raw) : null
  }

  async list(): Promise<Entry[]> {
    return Object.values(this.read().entries)
      .map((raw) => this.entryOf(raw))
      .sort((a, b) => comparePyStr(a.definition.name, b.definition.name))
  }

  private put(data: FileShape, definition: EntryDefinition, meta: EntryMeta | undefined, now: number): void {
    const existing = data.entries[definition.name]
    const keptMeta = meta ?? (existing ? decodeMeta(JSON.stringify(existing.meta ?? {})) : { lastRunAt: now, totalRunCount: 0 })
    data.entries[definition.name] = { definition: JSON.parse(encodeDefinition(definition)), meta: JSON.parse(encodeMeta(keptMeta)) }
  }

  async save(definition: EntryDefinition, options: { meta?: EntryMeta; now?: number } = {}): Promise<void> {
    await this.locked((data) => {
      this.put(data, definition, options.meta, options.now ?? Date.now())
      this.write(data)
    })
  }

  async remove(name: string): Promise<boolean> {
    return this.locked((data) => {
      if (!data.entries[name]) return false
      delete data.entries[name]
      data.statics = data.statics.filter((n) => n !== name)
      this.write(data)
      return true
    })
  }

  async syncStatics(definitions: EntryDefinition[], now: number): Promise<void> {
    await this.locked((data) => {
      const names = new Set(definitions.map((d) => d.name))
      for (const old of data.statics) if (!names.has(old)) delete data.entries[old]
      for (const d of definitions) {
        const current = data.entries[d.name]
        if (!current || JSON.stringify(current.definition) !== encodeDefinition(d)) this.put(data, d, undefined, now)
      }
      data.statics = [...names]
      this.write(data)
    })
  }

  async watch(listener: () => void): Promise<() => Promise<void>> {
    // fs.watch misses atomic renames on some filesystems; polling the stat is enough here.
    const onChange = () => listener()
    watchFile(this.path, { interval: 250 }, onChange)
    return async () => unwatchFile(this.path, onChange)
  }

  async close(): Promise<void> {}
}
