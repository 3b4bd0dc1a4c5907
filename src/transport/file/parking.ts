// Parking lots of the embedded broker: `<root>/parked/<lot>/` holds one file
// per message, `<time base36>~<priority hex>~<id>~<queue>.msg`, its content
// the kombu envelope it goes back as. Names sort by time. Releasing one is a
// rename into its queue's ready/ folder: atomic, so a process that dies
// mid-move loses nothing and moves nothing twice.
import { mkdir, readFile, rename, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { PRIVATE_DIR_MODE } from '../private-files.js'
import type { OutgoingMessage, ParkedMessage, Parking, ParkOptions } from '../transport.js'
import { decodeEnvelope, encodeEnvelope } from './envelope.js'
import { type FileLayout, ignoreMissing, isErrno, listDir, writeFileAtomic } from './layout.js'
import { escapeName, messageFileName, newMessageBase, unescapeName } from './names.js'
import { parkedId } from '../parked-id.js'

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

export class FileParking implements Parking {
  private readonly root: string

  constructor(
    private readonly layout: FileLayout,
    private readonly assertOpen: () => void,
  ) {
    this.root = join(layout.root, 'parked')
  }

  private lotDir(lot: string): string {
    return join(this.root, escapeName(lot))
  }

  private async entries(lot: string): Promise<ParkedName[]> {
    return (await listDir(this.lotDir(lot)))
      .map(parseParkedName)
      .filter((p): p is ParkedName => p !== undefined)
      .sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))
  }

  async park(lot: string, target: { queue: string; exchange: string; routingKey: string }, message: OutgoingMessage, at: number, options: ParkOptions = {}): Promise<void> {
    this.assertOpen()
    const now = Date.now()
    const dir = this.lotDir(lot)
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
    await writeFileAtomic(this.layout, join(dir, parkedFileName(at, message.properties.priority, parkedId(), target.queue)), encodeEnvelope(target.exchange, target.routingKey, message))
    if (options.maxAgeMs === undefined && options.maxLength === undefined) return
    const all = await this.entries(lot)
    const oldest = options.maxAgeMs !== undefined ? now - options.maxAgeMs : Number.NEGATIVE_INFINITY
    const expired = all.filter((p) => p.at < oldest)
    const kept = all.length - expired.length
    const over = options.maxLength !== undefined ? Math.max(0, kept - options.maxLength) : 0
    const doomed = [...expired, ...all.filter((p) => p.at >= oldest).slice(0, over)]
    for (const p of doomed) await ignoreMissing(unlink(join(dir, p.file)))
  }

  async releaseDue(lots: readonly string[]): Promise<{ moved: number; nextAt: number | null }> {
    this.assertOpen()
    let moved = 0
    let nextAt: number | null = null
    const now = Date.now()
    for (const lot of lots) {
      for (const p of await this.entries(lot)) {
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

  async list(lot: string, options: { limit?: number } = {}): Promise<ParkedMessage[]> {
    this.assertOpen()
    const out: ParkedMessage[] = []
    for (const p of await this.entries(lot)) {
      if (options.limit !== undefined && out.length >= options.limit) break
      let text: string
      try {
        text = await readFile(join(this.lotDir(lot), p.file), 'utf8')
      } catch (err) {
        if (isErrno(err, 'ENOENT')) continue
        throw err
      }
      try {
        const m = decodeEnvelope(text)
        out.push({ id: p.id, queue: p.queue, at: p.at, message: { body: m.body, properties: m.properties }, exchange: m.exchange, routingKey: m.routingKey })
      } catch {
        // A file that is not an envelope is not a message of the lot.
      }
    }
    return out
  }

  async drop(lot: string, ids: readonly string[]): Promise<number> {
    this.assertOpen()
    const wanted = new Set(ids)
    let dropped = 0
    for (const p of await this.entries(lot)) {
      if (wanted.has(p.id) && (await ignoreMissing(unlink(join(this.lotDir(lot), p.file))))) dropped += 1
    }
    return dropped
  }

  async count(lot: string): Promise<number> {
    this.assertOpen()
    return (await this.entries(lot)).length
  }
}
