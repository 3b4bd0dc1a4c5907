// Is a pid really the worker of a given node? A pidfile is only a hint: the
// process may be gone, or the pid reused by another program, and multi must
// never signal a process that is not the node's own worker.
import { readFileSync } from 'node:fs'
import { pidAlive, readPid } from '../process/index.js'
import { workerNodename } from '../protocol/index.js'

/** A pidfile's pid, or null (missing, empty or not a number). */
export const readPidfile = readPid

export { pidAlive }

/** The process's argv (Linux /proc), or null when it cannot be read. */
export function processArgv(pid: number): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    const parts = raw.split('\0')
    if (parts.at(-1) === '') parts.pop()
    return parts
  } catch {
    return null
  }
}

/**
 * The node name a worker argv runs as, or null when the argv is not a
 * worker's: tsq's, or Celery's (`python -m celery ... worker`, which a node
 * started with `--cmd "-m celery worker --detach"` runs).
 */
export function workerNodeOf(argv: readonly string[], hostname: string): string | null {
  const w = argv.indexOf('worker')
  if (w < 1 || !argv.slice(0, w).some((a) => /(^|\/)(tsq|run\.js|dev\.js|celery)$/.test(a))) return null
  let value: string | undefined
  const rest = argv.slice(w + 1)
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!
    if (a === '--') break
    if (a === '-n' || a === '--hostname') value = rest[i + 1]
    else if (a.startsWith('--hostname=')) value = a.slice('--hostname='.length)
    else if (a.startsWith('-n') && a.length > 2) value = a.slice(2).replace(/^=/, '')
  }
  try {
    return workerNodename(value, hostname)
  } catch {
    return null
  }
}

export type PidState =
  { kind: 'none' } | { kind: 'dead'; pid: number } | { kind: 'foreign'; pid: number; what: string } | { kind: 'running'; pid: number }

/** What the pidfile of `nodename` points at. */
export function inspectPidfile(path: string, nodename: string, hostname: string): PidState {
  const pid = readPidfile(path)
  if (pid === null) return { kind: 'none' }
  return inspectPid(pid, nodename, hostname)
}

export function inspectPid(pid: number, nodename: string, hostname: string): PidState {
  if (!pidAlive(pid)) return { kind: 'dead', pid }
  const argv = processArgv(pid)
  if (!argv) return { kind: 'foreign', pid, what: 'a process whose command line cannot be read' }
  const node = workerNodeOf(argv, hostname)
  if (node === nodename) return { kind: 'running', pid }
  const cmd = argv.join(' ')
  const shown = cmd.length > 60 ? `${cmd.slice(0, 57)}...` : cmd
  return { kind: 'foreign', pid, what: node ? `the worker of another node (${node})` : `another program (${shown})` }
}
