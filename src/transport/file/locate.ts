// Finding a task's message in the embedded broker without taking it (`tsq
// why`): a queue's ready/ files sort in delivery order (names.ts), so a
// message's place is its index there; a file under claimed/ was delivered and
// not acked. Files read one at a time; one that moves meanwhile is skipped.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseEnvelope } from '../kombu-envelope.js'
import type { LocateResult } from '../transport.js'
import { isErrno, listDir, type FileLayout } from './layout.js'

/** Messages one search reads, at most. */
const LOCATE_LIMIT = 100_000

async function holds(path: string, taskId: string): Promise<boolean> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if (isErrno(err, 'ENOENT', 'ENOTDIR')) return false
    throw err
  }
  if (!text.includes(taskId)) return false
  try {
    const envelope = parseEnvelope(text)
    return envelope.headers.id === taskId || envelope.properties.correlation_id === taskId
  } catch {
    return false
  }
}

export async function locateInFiles(
  layout: FileLayout,
  taskId: string,
  queues: readonly string[],
  limit = LOCATE_LIMIT,
): Promise<LocateResult> {
  const depths: Record<string, number> = {}
  let scanned = 0
  let truncated = false
  for (const queue of queues) {
    const paths = layout.queuePaths(queue)
    const ready = (await listDir(paths.ready)).filter((n) => n.endsWith('.msg')).sort()
    depths[queue] = ready.length
    for (let i = 0; i < ready.length; i += 1) {
      if (scanned >= limit) {
        truncated = true
        break
      }
      scanned += 1
      if (await holds(join(paths.ready, ready[i]!), taskId))
        return { found: { where: 'queue', queue, position: i, depth: ready.length }, depths, scanned, truncated }
    }
  }
  for (const queue of queues) {
    const claimed = layout.queuePaths(queue).claimed
    for (const owner of await listDir(claimed))
      for (const name of await listDir(join(claimed, owner)))
        if (await holds(join(claimed, owner, name), taskId))
          return { found: { where: 'unacked', queue, position: null, depth: depths[queue] ?? null }, depths, scanned, truncated }
  }
  return { found: null, depths, scanned, truncated }
}
