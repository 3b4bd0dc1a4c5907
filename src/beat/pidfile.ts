// beat's pidfile: the worker's rules (src/worker/pidfile.ts), but a live pid
// counts as taken only when it is a tsq beat.
import { closeSync, constants, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import { pidAlive, readPid } from '../worker/pidfile.js'

export class BeatPidfileError extends Error {
  readonly code = 'CANT_CREATE'
}

function isTsqBeat(pid: number): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    return cmdline.some((a) => /tsq|bin\/run\.js|bin\/dev\.js/.test(a)) && cmdline.includes('beat')
  } catch {
    return false
  }
}

export function acquireBeatPidfile(path: string, warn: (m: string) => void): () => void {
  mkdirSync(dirname(path), { recursive: true })
  const existing = readPid(path)
  if (existing !== null && existing !== process.pid) {
    if (pidAlive(existing) && isTsqBeat(existing)) throw new BeatPidfileError(`Pidfile (${path}) already exists: beat pid ${existing} is running`)
    warn(`Replacing stale pidfile ${path} (pid ${existing})`)
    unlinkSync(path)
  }
  let fd: number
  try {
    fd = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644)
  } catch (error) {
    throw new BeatPidfileError(`cannot create pidfile ${path}: ${(error as Error).message}`)
  }
  writeSync(fd, `${process.pid}\n`)
  closeSync(fd)
  return () => {
    if (readPid(path) === process.pid) {
      try {
        unlinkSync(path)
      } catch {
        // Already gone.
      }
    }
  }
}
