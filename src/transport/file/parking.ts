// Parking lots of the embedded broker, the store under the virtual layer's
// parking (virtual/parking.ts): `<root>/parked/<lot>/` holds one file per
// message, `<time base36>~<priority hex>~<id>~<queue>.msg`, its content the
// kombu envelope it goes back as. Names sort by time. Releasing one is a
// rename into its queue's ready/ folder: atomic, so a process that dies
// mid-move loses nothing and moves nothing twice.
import { mkdir, readFile, rename, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { PRIVATE_DIR_MODE } from '../private-files.js'
import type { ParkedEntry, ParkingStore, ParkTrim } from '../virtual/parking.js'
import { type FileLayout, ignoreMissing, isErrno, listDir, writeFileAtomic } from './layout.js'
import { escapeName, messageFileName, newMessageBase, unescapeName } from './names.js'

const SEP = '~'
const EXT = '.msg'

interface ParkedName {
  file: string
  at: number
  priority: number
  id: string
  queue: string
}

function parkedFileName(at: number, priority: number, id: string, queue: string): string {
  return `${Math.max(0, Math.round(at)).toString(36).padStart(9, '0')}${SEP}${Math.max(0, Math.min(255, priority)).toString(16).padStart(2, '0')}${SEP}${id}${SEP}${escapeName(queue)}${EXT}`
}

function parseParkedName(file: string): ParkedName | undefined {
  if (!file.endsWith(EXT)) return undefined
  const parts = file.slice(0, -EXT.length).split(SEP)
  if (parts.length !== 4) return undefined
  const [at36, prio, id, queue] = parts as [string, string, string, string]
  const at = Number.parseInt(at36, 36)
  const priority = Number.parseInt(prio, 16)
  if (!Number.isFinite(at) || !Number.isFinite(priority)) return undefined
  try {
    return { file, at, priority, id, queue: unescapeName(queue) }
  } catch {
    return undefined
  }
}

export class FileParkingStore implements ParkingStore {
  private readonly root: string

  constructor(private readonly layout: FileLayout) {
    this.root = join(layout.root, 'parked')
  }

  private lotDir(lot: string): string {
    return join(this.root, escapeName(lot))
  }

  private async names(lot: string): Promise<ParkedName[]> {
    return (await listDir(this.lotDir(lot)))
      .map(parseParkedName)
      .filter((p): p is ParkedName => p !== undefined)
      .sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))
  }

  async add(lot: string, entry: ParkedEntry, priority: number, trim: ParkTrim): Promise<void> {
    const dir = this.lotDir(lot)
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
    await writeFileAtomic(this.layout, join(dir, parkedFileName(entry.at, priority, entry.id, entry.queue)), entry.envelope)
    if (trim.minAt === undefined && trim.maxLength === undefined) return
    const all = await this.names(lot)
    const oldest = trim.minAt ?? Number.NEGATIVE_INFINITY
    const expired = all.filter((p) => p.at < oldest)
    const kept = all.length - expired.length
    const over = trim.maxLength !== undefined ? Math.max(0, kept - trim.maxLength) : 0
    const doomed = [...expired, ...all.filter((p) => p.at >= oldest).slice(0, over)]
    for (const p of doomed) await ignoreMissing(unlink(join(dir, p.file)))
  }

  async releaseDue(lots: readonly string[], now: number): Promise<{ moved: number; nextAt: number | null }> {
    let moved = 0
    let nextAt: number | null = null
    for (const lot of lots) {
      for (const p of await this.names(lot)) {
        if (p.at > now) {
          nextAt = nextAt === null ? p.at : Math.min(nextAt, p.at)
          break
        }
        if (await this.moveToQueue(lot, p)) moved += 1
      }
    }
    return { moved, nextAt }
  }

  /** One rename; the queue's folders are made when it has none yet (the message is not lost for want of a queue). */
  private async moveToQueue(lot: string, p: ParkedName): Promise<boolean> {
    const ready = this.layout.queuePaths(p.queue).ready
    const target = join(ready, messageFileName(newMessageBase(p.priority), false))
    const from = join(this.lotDir(lot), p.file)
    try {
      await rename(from, target)
      return true
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err
    }
    // Either another process moved it (the source is gone) or the queue has no folder yet.
    const paths = this.layout.queuePaths(p.queue)
    for (const dir of [paths.ready, paths.claimed, paths.consumers]) await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
    return ignoreMissing(rename(from, target))
  }

  async entries(lot: string, limit?: number): Promise<ParkedEntry[]> {
    const out: ParkedEntry[] = []
    for (const p of await this.names(lot)) {
      if (limit !== undefined && out.length >= limit) break
      try {
        out.push({ id: p.id, queue: p.queue, at: p.at, envelope: await readFile(join(this.lotDir(lot), p.file), 'utf8') })
      } catch (err) {
        // Released or dropped by another process since the listing.
        if (!isErrno(err, 'ENOENT')) throw err
      }
    }
    return out
  }

  async remove(lot: string, ids: ReadonlySet<string>): Promise<number> {
    let dropped = 0
    for (const p of await this.names(lot)) {
      if (ids.has(p.id) && (await ignoreMissing(unlink(join(this.lotDir(lot), p.file))))) dropped += 1
    }
    return dropped
  }

  async count(lot: string): Promise<number> {
    return (await this.names(lot)).length
  }
}
