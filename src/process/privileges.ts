// `--uid`/`--gid`/`--umask` of `tsq worker` and `tsq beat`, as Celery's
// maybe_drop_privileges (celery/platforms.py) and DaemonContext read them.
import { execFileSync } from 'node:child_process'
import { TsqError } from '../protocol/index.js'

export class PrivilegeError extends TsqError {
  constructor(message: string, code: 'BAD_ARGUMENT' | 'PERMISSION') {
    super(code, message)
  }
}

// `id` and `getent` ask the system's user database (NSS: /etc/passwd, LDAP, ...),
// which Node cannot reach: it has no getpwnam. They run only when --uid or
// --gid is given.
function query(command: string, args: string[]): string | null {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return null
  }
}

function userId(spec: string): number {
  const id = /^\d+$/.test(spec) ? spec : query('id', ['-u', spec])
  if (id === null) throw new PrivilegeError(`--uid: user does not exist: ${spec}`, 'BAD_ARGUMENT')
  return Number(id)
}

function groupId(spec: string): number {
  const id = /^\d+$/.test(spec) ? spec : query('getent', ['group', spec])?.split(':')[2]
  if (id === undefined || id === null) throw new PrivilegeError(`--gid: group does not exist: ${spec}`, 'BAD_ARGUMENT')
  return Number(id)
}

function primaryGroupOf(uid: number, uidSpec: string): number {
  const id = query('id', ['-g', String(uid)])
  if (id === null) throw new PrivilegeError(`--uid: user does not exist: ${uidSpec}`, 'BAD_ARGUMENT')
  return Number(id)
}

function permissionDenied(what: string, error: unknown): PrivilegeError {
  const reason = (error as NodeJS.ErrnoException).code === 'EPERM' ? 'only root can change it' : (error as Error).message
  return new PrivilegeError(`cannot run as ${what}: ${reason}`, 'PERMISSION')
}

/** @types/node leaves initgroups out; Node has it on every POSIX system. */
interface PosixProcess {
  initgroups(user: number | string, extraGroup: number | string): void
}

export interface Credentials {
  uid?: number
  gid?: number
}

/** The ids --uid and --gid name (a name or a number), checked to exist. */
export function resolveCredentials(uidSpec: string | undefined, gidSpec: string | undefined): Credentials {
  const uid = uidSpec ? userId(uidSpec) : undefined
  const gid = gidSpec ? groupId(gidSpec) : uid !== undefined ? primaryGroupOf(uid, uidSpec!) : undefined
  return { uid, gid }
}

/**
 * Become the given user and/or group before anything else is opened (pidfile,
 * logfile, broker files), so all of it belongs to them. With only --uid the
 * group is that user's primary group and the supplementary groups are theirs
 * (initgroups), as in Celery; with only --gid only the group changes.
 */
export function dropPrivileges(uidSpec: string | undefined, gidSpec: string | undefined): void {
  const { uid, gid } = resolveCredentials(uidSpec, gidSpec)
  if (uid === undefined && (gid === undefined || gid === process.getgid!())) return
  if (uid === undefined) {
    try {
      process.setgid!(gid!)
    } catch (error) {
      throw permissionDenied(`group ${gidSpec}`, error)
    }
    return
  }
  if (uid === process.getuid!() && gid === process.getgid!()) return
  const posix = process as unknown as PosixProcess
  try {
    // The group first: once the user is not root, the group cannot change.
    process.setgid!(gid!)
    posix.initgroups(uid, gid!)
    process.setuid!(uid)
  } catch (error) {
    throw permissionDenied(`user ${uidSpec}`, error)
  }
  // As Celery checks: a process that can become root again dropped nothing.
  let restored = false
  try {
    process.setuid!(0)
    restored = true
  } catch {
    // EPERM: as it should be
  }
  if (restored) throw new PrivilegeError(`--uid ${uidSpec}: the process could become root again after dropping privileges`, 'PERMISSION')
}

/** Celery's reading of --umask: octal with a leading 0 (`022`), else decimal. */
export function parseUmask(raw: string): number {
  const octal = raw.startsWith('0')
  const valid = octal ? /^[0-7]+$/.test(raw) : /^\d+$/.test(raw)
  const value = valid ? parseInt(raw, octal ? 8 : 10) : NaN
  if (!Number.isInteger(value) || value > 0o777)
    throw new PrivilegeError(
      `--umask must be a mask such as 022 (octal with a leading 0) or 18, got ${JSON.stringify(raw)}`,
      'BAD_ARGUMENT',
    )
  return value
}
