// Queue folders: declaration, publishing into ready/, counting, purging and
// deleting. A queue exists when its folder does.
import { link, mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { QueueArguments, QueueSpec } from '../transport.js'
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, writeNewFile } from '../private-files.js'
import { type FileLayout, ignoreMissing, isErrno, listDir, removeTree, writeFileAtomic } from './layout.js'
import { messageFileName, parseMessageFileName } from './names.js'
import type { ExchangeTable } from './routing.js'

export interface QueueMeta {
  name: string
  durable: boolean
  exclusive: boolean
  autoDelete: boolean
  arguments: QueueArguments
}

const implicitMeta = (name: string): QueueMeta => ({ name, durable: true, exclusive: false, autoDelete: false, arguments: {} })

export class QueueStore {
  constructor(
    private readonly layout: FileLayout,
    private readonly exchanges: ExchangeTable,
  ) {}

  private async makeDirs(queue: string): Promise<void> {
    const q = this.layout.queuePaths(queue)
    await mkdir(q.ready, { recursive: true, mode: PRIVATE_DIR_MODE })
    await mkdir(q.claimed, { recursive: true, mode: PRIVATE_DIR_MODE })
    await mkdir(q.consumers, { recursive: true, mode: PRIVATE_DIR_MODE })
  }

  /** Idempotent; the latest declaration's arguments win (a queue first created by a publish has none). */
  async declare(spec: QueueSpec): Promise<number> {
    await this.makeDirs(spec.name)
    const q = this.layout.queuePaths(spec.name)
    const meta: QueueMeta = {
      name: spec.name,
      durable: spec.durable,
      exclusive: spec.exclusive,
      autoDelete: spec.autoDelete,
      arguments: spec.arguments ?? {},
    }
    await writeFileAtomic(this.layout, q.meta, JSON.stringify(meta))
    await this.touch(spec.name)
    return this.count(spec.name)
  }

  /** Marks the queue as used now (x-expires counts from the last use). */
  async touch(queue: string): Promise<void> {
    await ignoreMissing(writeFile(this.layout.queuePaths(queue).used, '', { mode: PRIVATE_FILE_MODE }))
  }

  async exists(queue: string): Promise<boolean> {
    try {
      return (await stat(this.layout.queuePaths(queue).ready)).isDirectory()
    } catch (err) {
      if (isErrno(err, 'ENOENT', 'ENOTDIR')) return false
      throw err
    }
  }

  async meta(queue: string): Promise<QueueMeta | undefined> {
    try {
      return JSON.parse(await readFile(this.layout.queuePaths(queue).meta, 'utf8')) as QueueMeta
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return (await this.exists(queue)) ? implicitMeta(queue) : undefined
      if (err instanceof SyntaxError) return implicitMeta(queue)
      throw err
    }
  }

  async count(queue: string): Promise<number> {
    return (await listDir(this.layout.queuePaths(queue).ready)).filter((f) => parseMessageFileName(f)).length
  }

  async purge(queue: string): Promise<number> {
    const ready = this.layout.queuePaths(queue).ready
    let removed = 0
    for (const file of await listDir(ready)) {
      if (parseMessageFileName(file) && (await ignoreMissing(unlink(join(ready, file))))) removed += 1
    }
    return removed
  }

  async delete(queue: string): Promise<void> {
    await removeTree(this.layout, this.layout.queueDir(queue))
    await this.exchanges.removeQueue(queue)
  }

  /**
   * Writes the message once and moves it into each queue's ready/ folder:
   * rename for one queue, hard links for several (fanout), so each copy appears
   * whole and at once. `createMissing` is for the default exchange, where a task
   * may be sent before any worker declared its queue.
   */
  async put(queues: readonly string[], base: string, data: string, createMissing: boolean): Promise<number> {
    if (queues.length === 0) return 0
    const tmp = this.layout.tmpFile()
    await writeNewFile(tmp, data)
    const file = messageFileName(base, false)
    let delivered = 0
    try {
      for (const [i, queue] of queues.entries()) {
        const target = join(this.layout.queuePaths(queue).ready, file)
        const last = i === queues.length - 1
        const place = () => (last ? rename(tmp, target) : link(tmp, target))
        try {
          await place()
          delivered += 1
        } catch (err) {
          if (!isErrno(err, 'ENOENT')) throw err
          // The queue is gone (or not created yet): create it only when asked to.
          if (!createMissing) continue
          await this.makeDirs(queue)
          await place()
          delivered += 1
        }
      }
    } finally {
      await unlink(tmp).catch(() => undefined)
    }
    return delivered
  }
}
