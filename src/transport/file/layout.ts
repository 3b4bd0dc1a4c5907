// The folder tree of the embedded broker, and the few filesystem moves it is
// built from. Everything another process may read is written to tmp/ first and
// renamed into place, so readers never see half a file.
//
//   <root>/tmp/                         staging for atomic writes
//   <root>/trash/                       queues being deleted (renamed here first)
//   <root>/owners/<owner>.json          one per connected transport: pid, start time; mtime = heartbeat
//   <root>/exchanges/<ex>.json          exchange declarations
//   <root>/bindings/<ex>/<queue>~<key>  one empty file per binding
//   <root>/queues/<q>/meta.json         queue declaration (arguments)
//   <root>/queues/<q>/used              mtime = last declare or consumer heartbeat (x-expires, auto-delete grace)
//   <root>/queues/<q>/ready/*.msg       messages waiting, sorted by name
//   <root>/queues/<q>/claimed/<owner>/  messages delivered to that owner, not yet acked
//   <root>/queues/<q>/consumers/<owner>~<tag>
import { mkdir, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { ensurePrivateDir, PRIVATE_DIR_MODE, replaceFile } from '../private-files.js'
import { escapeName, randomId } from './names.js'

export class FileLayout {
  readonly tmp: string
  readonly trash: string
  readonly owners: string
  readonly exchanges: string
  readonly bindings: string
  readonly queues: string

  constructor(readonly root: string) {
    this.tmp = join(root, 'tmp')
    this.trash = join(root, 'trash')
    this.owners = join(root, 'owners')
    this.exchanges = join(root, 'exchanges')
    this.bindings = join(root, 'bindings')
    this.queues = join(root, 'queues')
  }

  /** The root is checked (ours, not writable by others) and made 0700; what is under it is only reachable through it. */
  async ensureTree(): Promise<void> {
    await ensurePrivateDir(this.root, 'file:// broker folder')
    for (const dir of [this.tmp, this.trash, this.owners, this.exchanges, this.bindings, this.queues]) {
      await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
    }
  }

  ownerFile(owner: string): string {
    return join(this.owners, `${owner}.json`)
  }

  exchangeFile(exchange: string): string {
    return join(this.exchanges, `${escapeName(exchange)}.json`)
  }

  bindingDir(exchange: string): string {
    return join(this.bindings, escapeName(exchange))
  }

  queueDir(queue: string): string {
    return join(this.queues, escapeName(queue))
  }

  queuePaths(queue: string): QueuePaths {
    return queuePathsIn(this.queueDir(queue))
  }

  tmpFile(): string {
    return join(this.tmp, `${process.pid}-${randomId(8)}.tmp`)
  }
}

export interface QueuePaths {
  dir: string
  meta: string
  used: string
  ready: string
  claimed: string
  consumers: string
}

export function queuePathsIn(dir: string): QueuePaths {
  return {
    dir,
    meta: join(dir, 'meta.json'),
    used: join(dir, 'used'),
    ready: join(dir, 'ready'),
    claimed: join(dir, 'claimed'),
    consumers: join(dir, 'consumers'),
  }
}

export function isErrno(err: unknown, ...codes: string[]): boolean {
  return typeof err === 'object' && err !== null && codes.includes((err as NodeJS.ErrnoException).code ?? '')
}

/** readdir that treats a missing folder as empty (it may be deleted by another process at any time). */
export async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir)
  } catch (err) {
    if (isErrno(err, 'ENOENT', 'ENOTDIR')) return []
    throw err
  }
}

/** Runs a filesystem step that loses a race harmlessly when the file is already gone. */
export async function ignoreMissing(step: Promise<unknown>): Promise<boolean> {
  try {
    await step
    return true
  } catch (err) {
    if (isErrno(err, 'ENOENT', 'ENOTDIR')) return false
    throw err
  }
}

/** Staged in tmp/ and renamed into place; a failed write (a full disk) leaves no partial file in tmp/. */
export async function writeFileAtomic(layout: FileLayout, path: string, data: string | Buffer): Promise<void> {
  await replaceFile(layout.tmpFile(), path, data)
}

/** Deletes a folder tree by first renaming it out of sight, so no reader sees it half-deleted. */
export async function removeTree(layout: FileLayout, dir: string): Promise<boolean> {
  const doomed = join(layout.trash, `${randomId(8)}`)
  const moved = await ignoreMissing(rename(dir, doomed))
  if (moved) await rm(doomed, { recursive: true, force: true })
  return moved
}
