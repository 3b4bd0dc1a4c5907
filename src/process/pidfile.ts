// Celery's pidfile rules (celery/platforms.py), without its trap: a pidfile
// whose process is dead, or is not the same tsq command, is replaced with a
// warning. Shared by worker, beat and multi, which are peers above this layer.
import { closeSync, openSync, readFileSync, unlinkSync, writeSync, mkdirSync, constants } from 'node:fs'
import { dirname } from 'node:path'
import { codedError } from '../protocol/index.js'

export class PidfileError extends codedError('CANT_CREATE') {}

export function readPid(path: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10)
    return Number.isInteger(pid) && pid > 0 ? pid : null
  } catch {
    return null
  }
}

/** A zombie (exited, not yet reaped by its parent) still answers kill(pid, 0) but is dead. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
  return !isZombie(pid)
}

function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The state follows the command name, which is parenthesised and may itself hold ') '.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z'
  } catch {
    return false
  }
}

export type TsqCommandName = 'worker' | 'beat'

/** Fails as acquirePidfile would when a live tsq process of this command holds the pidfile (checked before detaching, so the caller sees it). */
export function checkPidfile(path: string, command: TsqCommandName = 'worker'): void {
  const existing = readPid(path)
  if (existing !== null && existing !== process.pid && pidAlive(existing) && isTsqCommand(existing, command)) {
    throw new PidfileError(`Pidfile (${path}) already exists: ${command} pid ${existing} is running`)
  }
}

/** True when the live process's command line is `tsq <command>` (Linux /proc). */
export function isTsqCommand(pid: number, command: TsqCommandName): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    return cmdline.some((a) => /tsq|bin\/run\.js|bin\/dev\.js/.test(a)) && cmdline.includes(command)
  } catch {
    return false
  }
}

export function isTsqWorker(pid: number): boolean {
  return isTsqCommand(pid, 'worker')
}

export function acquirePidfile(path: string, warn: (m: string) => void, command: TsqCommandName = 'worker'): () => void {
  mkdirSync(dirname(path), { recursive: true })
  const existing = readPid(path)
  if (existing !== null && existing !== process.pid) {
    if (pidAlive(existing) && isTsqCommand(existing, command))
      throw new PidfileError(`Pidfile (${path}) already exists: ${command} pid ${existing} is running`)
    warn(`Replacing stale pidfile ${path} (pid ${existing} is ${pidAlive(existing) ? `not a tsq ${command}` : 'not running'})`)
    unlinkSync(path)
  }
  let fd: number
  try {
    fd = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644)
  } catch (error) {
    throw new PidfileError(`cannot create pidfile ${path}: ${(error as Error).message}`)
  }
  writeSync(fd, `${process.pid}\n`)
  closeSync(fd)
  return () => {
    if (readPid(path) === process.pid) {
      try {
        unlinkSync(path)
      } catch {
        // Already gone: nothing to clean.
      }
    }
  }
}
