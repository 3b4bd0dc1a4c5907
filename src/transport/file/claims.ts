// Claims: a delivery is a message file renamed from ready/ into
// claimed/<owner>/. Rename is atomic, so exactly one consumer wins each message;
// ack unlinks it, requeue renames it back under the same sort key (so it keeps
// its place, as AMQP requeue does) with the redelivered marker.
import { mkdir, readFile, rename, rmdir, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { PRIVATE_DIR_MODE } from '../private-files.js'
import { type FileLayout, type QueuePaths, ignoreMissing, isErrno, listDir } from './layout.js'
import { type MessageName, messageFileName, parseMessageFileName } from './names.js'

export interface Claim {
  queue: string
  /** The file name inside claimed/<owner>/. */
  file: string
  name: MessageName
  text: string
}

async function requeueFile(q: QueuePaths, claimDir: string, file: string): Promise<boolean> {
  const name = parseMessageFileName(file)
  if (!name) return ignoreMissing(unlink(join(claimDir, file)))
  return ignoreMissing(rename(join(claimDir, file), join(q.ready, messageFileName(name.base, true))))
}

/** Hands every message in one owner's claim folder back to ready/; used for our own close and for dead owners. */
export async function restoreClaimDir(q: QueuePaths, owner: string): Promise<number> {
  const dir = join(q.claimed, owner)
  let restored = 0
  for (const file of await listDir(dir)) {
    if (await requeueFile(q, dir, file)) restored += 1
  }
  await rmdir(dir).catch(() => undefined)
  return restored
}

export class ClaimBook {
  /** Queues where this owner may hold claims, to hand them back on close. */
  private readonly queues = new Set<string>()

  constructor(
    private readonly layout: FileLayout,
    readonly owner: string,
  ) {}

  private claimDir(queue: string): string {
    return join(this.layout.queuePaths(queue).claimed, this.owner)
  }

  /** Undefined when another consumer won the race, or the queue is gone. */
  async claim(queue: string, readyFile: string): Promise<Claim | undefined> {
    const q = this.layout.queuePaths(queue)
    const dir = this.claimDir(queue)
    const src = join(q.ready, readyFile)
    const dst = join(dir, readyFile)
    try {
      await rename(src, dst)
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err
      // Either the message was taken or our claim folder does not exist yet. Not
      // recursive: if claimed/ itself is gone the queue was deleted, and we must not resurrect it.
      try {
        await mkdir(dir, { mode: PRIVATE_DIR_MODE })
      } catch (mkErr) {
        if (isErrno(mkErr, 'ENOENT')) return undefined
        if (!isErrno(mkErr, 'EEXIST')) throw mkErr
      }
      this.queues.add(queue)
      if (!(await ignoreMissing(rename(src, dst)))) return undefined
    }
    this.queues.add(queue)
    const name = parseMessageFileName(readyFile)
    let text: string
    try {
      text = await readFile(dst, 'utf8')
    } catch (err) {
      // A sweeper wrongly judged us dead and moved it back; it is someone else's now.
      if (isErrno(err, 'ENOENT')) return undefined
      throw err
    }
    if (!name) {
      await ignoreMissing(unlink(dst))
      return undefined
    }
    return { queue, file: readyFile, name, text }
  }

  async ack(claim: Claim): Promise<void> {
    await ignoreMissing(unlink(join(this.claimDir(claim.queue), claim.file)))
  }

  async requeue(claim: Claim): Promise<void> {
    await requeueFile(this.layout.queuePaths(claim.queue), this.claimDir(claim.queue), claim.file)
  }

  /** Hands back every claim this owner holds. */
  async returnAll(): Promise<number> {
    let restored = 0
    for (const queue of this.queues) restored += await restoreClaimDir(this.layout.queuePaths(queue), this.owner)
    this.queues.clear()
    return restored
  }
}
