// Housekeeping any process may do, because there is no server to do it: hand
// back the claims of dead owners, forget dead consumers, delete queues that
// expired (x-expires) or lost their last consumer (auto-delete), drop messages
// past x-message-ttl, and clear stale temp files. Every step tolerates another
// process doing the same step at the same time.
import { readFile, rm, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { restoreClaimDir } from './claims.js'
import { type FileLayout, ignoreMissing, isErrno, listDir, queuePathsIn } from './layout.js'
import { parseMessageFileName } from './names.js'
import { OwnerLiveness } from './owners.js'
import type { QueueMeta, QueueStore } from './queues.js'

/** Temp files older than this belong to a publisher that died mid-write. */
const STALE_TMP_MS = 10 * 60_000
/**
 * An auto-delete queue whose consumers all died goes only once nobody has
 * declared or consumed it for this long. Live consumers touch it every
 * heartbeat (1 s), so a few seconds tell a dead queue from one being declared.
 */
export const AUTO_DELETE_GRACE_MS = 3_000

export const CONSUMER_SEP = '~'

export interface SweepReport {
  restored: number
  deletedQueues: string[]
}

export class Sweeper {
  constructor(
    private readonly layout: FileLayout,
    private readonly queues: QueueStore,
    private readonly self: string,
  ) {}

  async sweepAll(): Promise<SweepReport> {
    const live = new OwnerLiveness(this.layout, this.self)
    const report: SweepReport = { restored: 0, deletedQueues: [] }
    for (const escaped of await listDir(this.layout.queues)) await this.sweepOne(escaped, live, report)
    for (const file of await listDir(this.layout.owners)) {
      const owner = file.replace(/\.json$/, '')
      if (!(await live.isAlive(owner))) await ignoreMissing(unlink(join(this.layout.owners, file)))
    }
    await this.clearTmp()
    for (const doomed of await listDir(this.layout.trash)) {
      await rm(join(this.layout.trash, doomed), { recursive: true, force: true })
    }
    return report
  }

  /** Just one queue: run when a consumer starts, so orphans reach it at once. */
  async sweepQueue(escaped: string): Promise<SweepReport> {
    const report: SweepReport = { restored: 0, deletedQueues: [] }
    await this.sweepOne(escaped, new OwnerLiveness(this.layout, this.self), report)
    return report
  }

  /**
   * A queue declared after its consumers died starts a new life, as RabbitMQ
   * would have deleted the old one with its consumers' connection: its dead
   * consumer files must not make a sweeper auto-delete it before it is consumed.
   */
  async forgetDeadConsumers(escaped: string): Promise<void> {
    const consumers = queuePathsIn(join(this.layout.queues, escaped)).consumers
    const { dead } = await consumersOf(consumers, new OwnerLiveness(this.layout, this.self))
    for (const file of dead) await ignoreMissing(unlink(join(consumers, file)))
  }

  private async sweepOne(escaped: string, live: OwnerLiveness, report: SweepReport): Promise<void> {
    const q = queuePathsIn(join(this.layout.queues, escaped))
    for (const owner of await listDir(q.claimed)) {
      if (!(await live.isAlive(owner))) report.restored += await restoreClaimDir(q, owner)
    }
    const { liveConsumers, dead } = await consumersOf(q.consumers, live)
    const meta = await readMeta(q.meta)
    // The dead files are how a later sweep knows an auto-delete queue lost its
    // last consumer, so they stay until it is deleted or has a live one again.
    const lostLast = meta?.autoDelete === true && liveConsumers === 0 && dead.length > 0
    if (!lostLast) for (const file of dead) await ignoreMissing(unlink(join(q.consumers, file)))
    if (!meta) return
    // A used queue is not deleted for its dead consumers alone: a queue declared
    // again (a worker restarted under its old name) is touched at once but
    // writes its consumer file only when it consumes.
    if (liveConsumers === 0 && ((lostLast && (await idleFor(q.used, AUTO_DELETE_GRACE_MS))) || (await expired(q.used, meta)))) {
      await this.queues.delete(meta.name)
      report.deletedQueues.push(meta.name)
      return
    }
    const ttl = meta.arguments['x-message-ttl']
    if (typeof ttl === 'number') {
      const now = Date.now()
      for (const file of await listDir(q.ready)) {
        const msg = parseMessageFileName(file)
        if (msg && msg.publishedAt + ttl < now) await ignoreMissing(unlink(join(q.ready, file)))
      }
    }
  }

  private async clearTmp(): Promise<void> {
    const now = Date.now()
    for (const file of await listDir(this.layout.tmp)) {
      const path = join(this.layout.tmp, file)
      try {
        if (now - (await stat(path)).mtimeMs > STALE_TMP_MS) await ignoreMissing(unlink(path))
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err
      }
    }
  }
}

/** A queue's consumer files: how many belong to live owners, and the dead owners' files. */
export async function consumersOf(dir: string, live: OwnerLiveness): Promise<{ liveConsumers: number; dead: string[] }> {
  let liveConsumers = 0
  const dead: string[] = []
  for (const file of await listDir(dir)) {
    if (await live.isAlive(file.split(CONSUMER_SEP)[0] ?? '')) liveConsumers += 1
    else dead.push(file)
  }
  return { liveConsumers, dead }
}

async function readMeta(path: string): Promise<QueueMeta | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as QueueMeta
  } catch {
    // Implicit queues (created by a publish) have no meta and so no expiry rules.
    return undefined
  }
}

async function expired(usedPath: string, meta: QueueMeta): Promise<boolean> {
  const expires = meta.arguments['x-expires']
  return typeof expires === 'number' && (await idleFor(usedPath, expires))
}

async function idleFor(usedPath: string, ms: number): Promise<boolean> {
  try {
    return Date.now() - (await stat(usedPath)).mtimeMs > ms
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return false
    throw err
  }
}
