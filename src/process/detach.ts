// `tsq worker|beat --detach`: start the same command again in its own session with
// no terminal, its output going to the log file, and return at once.
import { spawn } from 'node:child_process'
import { mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'

const DETACH_FLAGS = new Set(['-D', '--detach'])

/**
 * `umask`: --umask, set before the log file is created so that it, and the
 * detached process, get it. `executable`: the node binary (--executable).
 */
export function detach(
  command: 'worker' | 'beat',
  argv: readonly string[],
  logfile: string | null,
  how: { umask?: number; executable?: string } = {},
): number {
  const { umask, executable = process.execPath } = how
  const args = argv.filter((a) => !DETACH_FLAGS.has(a))
  if (umask !== undefined) process.umask(umask)
  let out: number | 'ignore' = 'ignore'
  if (logfile) {
    mkdirSync(dirname(logfile), { recursive: true })
    out = openSync(logfile, 'a')
  }
  const child = spawn(executable, [...process.execArgv, process.argv[1]!, command, ...args], {
    detached: true,
    stdio: ['ignore', out, out],
    cwd: process.cwd(),
    env: { ...process.env, TSQ_DETACHED: '1' },
  })
  child.unref()
  return child.pid ?? -1
}
