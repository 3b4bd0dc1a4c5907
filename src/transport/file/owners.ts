// Who holds a claim. Every connected FileTransport is an owner: a file named
// after it (pid + random) records its pid and the kernel's start time for that
// pid, and its mtime is a heartbeat. A claim whose owner is gone goes back to
// its queue. The start time (Linux /proc) catches pid reuse without trusting
// clocks; where /proc is missing, a stale heartbeat does the same job.
import { readFileSync } from 'node:fs'
import { readFile, stat, unlink, utimes } from 'node:fs/promises'
import { type FileLayout, isErrno, writeFileAtomic } from './layout.js'
import { randomId } from './names.js'

/** Without /proc, an owner whose heartbeat is older than this is presumed dead. */
export const STALE_HEARTBEAT_MS = 30_000

interface OwnerRecord {
  pid: number
  /** /proc/<pid>/stat field 22 (clock ticks since boot), or null where unavailable. */
  start: string | null
  createdAt: number
}

interface ProcStat {
  start: string
  zombie: boolean
}

function readProcStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // comm (field 2) may contain spaces and parentheses; fields resume after the last ')'.
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ')
    const start = rest[19]
    if (start === undefined) return undefined
    return { start, zombie: rest[0] === 'Z' || rest[0] === 'X' }
  } catch {
    return undefined
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return isErrno(err, 'EPERM')
  }
}

export function ownerPid(owner: string): number | undefined {
  const pid = Number.parseInt(owner.split('-')[0] ?? '', 10)
  return Number.isInteger(pid) && pid > 0 ? pid : undefined
}

export class OwnerLease {
  readonly id = `${process.pid}-${randomId(6)}`
  private readonly record: OwnerRecord = {
    pid: process.pid,
    start: readProcStat(process.pid)?.start ?? null,
    createdAt: Date.now(),
  }

  constructor(private readonly layout: FileLayout) {}

  async acquire(): Promise<void> {
    await writeFileAtomic(this.layout, this.layout.ownerFile(this.id), JSON.stringify(this.record))
  }

  /** Touches the heartbeat; rewrites the file if a sweeper removed it while our event loop was stalled. */
  async heartbeat(): Promise<void> {
    const now = new Date()
    try {
      await utimes(this.layout.ownerFile(this.id), now, now)
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err
      await this.acquire()
    }
  }

  async release(): Promise<void> {
    await unlink(this.layout.ownerFile(this.id)).catch(() => undefined)
  }
}

/** Liveness answers for one sweep; a fresh instance per sweep so nothing goes stale. */
export class OwnerLiveness {
  private readonly cache = new Map<string, boolean>()

  constructor(
    private readonly layout: FileLayout,
    private readonly self: string,
  ) {}

  async isAlive(owner: string): Promise<boolean> {
    if (owner === this.self) return true
    const cached = this.cache.get(owner)
    if (cached !== undefined) return cached
    const alive = await this.check(owner)
    this.cache.set(owner, alive)
    return alive
  }

  private async check(owner: string): Promise<boolean> {
    const pid = ownerPid(owner)
    if (pid === undefined || !pidAlive(pid)) return false
    const file = this.layout.ownerFile(owner)
    let record: OwnerRecord
    let heartbeat: number
    try {
      record = JSON.parse(await readFile(file, 'utf8')) as OwnerRecord
      heartbeat = (await stat(file)).mtimeMs
    } catch (err) {
      // A live pid without an owner file: that transport closed (or never finished
      // connecting, but connect writes the file before any claim), so its leftovers are orphans.
      if (isErrno(err, 'ENOENT') || err instanceof SyntaxError) return false
      throw err
    }
    const proc = readProcStat(pid)
    if (proc && record.start !== null) return !proc.zombie && proc.start === record.start
    return Date.now() - heartbeat < STALE_HEARTBEAT_MS
  }
}
