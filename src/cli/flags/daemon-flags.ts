// Celery's "Daemonization Options" that `tsq worker` and `tsq beat` share
// beyond --detach, --pidfile and --logfile.
import { accessSync, constants, statSync } from 'node:fs'
import { resolve } from 'node:path'
import { Flags } from '@oclif/core'
import { parseUmask, resolveCredentials } from '../../process/index.js'
import { UsageError } from '../errors.js'

export const privilegeFlags = {
  executable: Flags.string({
    description:
      "With --detach, the node binary that runs the detached process (default: this one), as Celery's --executable names the Python.",
  }),
  uid: Flags.string({
    description: "Run as this user (name or id) once started as root; the group becomes the user's primary group unless --gid is given.",
  }),
  gid: Flags.string({ description: 'Run as this group (name or id).' }),
  umask: Flags.string({
    description: 'With --detach, the umask of the detached process (022: octal with a leading 0; else decimal), as in Celery.',
  }),
}

interface PrivilegeFlagValues {
  executable?: string
  uid?: string
  gid?: string
  umask?: string
}

/**
 * Before detaching: the user and group must exist, the umask must parse and
 * the executable must be one, so a mistake is reported here and not only in
 * the detached process's log. Returns how the detached process starts.
 */
export function checkPrivilegeFlags(flags: PrivilegeFlagValues): { umask: number | undefined; executable: string } {
  resolveCredentials(flags.uid, flags.gid)
  return { umask: flags.umask === undefined ? undefined : parseUmask(flags.umask), executable: checkExecutable(flags.executable) }
}

function checkExecutable(given: string | undefined): string {
  if (given === undefined) return process.execPath
  const path = resolve(given)
  try {
    accessSync(path, constants.X_OK)
    if (!statSync(path).isFile()) throw new Error('not a file')
  } catch {
    throw new UsageError(`--executable ${JSON.stringify(given)} is not an executable file`)
  }
  return path
}
