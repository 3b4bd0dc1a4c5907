// Celery's "Daemonization Options" that `tsq worker` and `tsq beat` share
// beyond --detach, --pidfile and --logfile.
import { Flags } from '@oclif/core'
import { parseUmask, resolveCredentials } from '../app/privileges.js'

export const privilegeFlags = {
  uid: Flags.string({ description: 'Run as this user (name or id) once started as root; the group becomes the user\'s primary group unless --gid is given.' }),
  gid: Flags.string({ description: 'Run as this group (name or id).' }),
  umask: Flags.string({ description: 'With --detach, the umask of the detached process (022: octal with a leading 0; else decimal), as in Celery.' }),
}

interface PrivilegeFlagValues {
  uid?: string
  gid?: string
  umask?: string
}

/**
 * Before detaching: the user and group must exist and the umask must parse,
 * so a mistake is reported here and not only in the detached process's log.
 * Returns the umask the detached process starts with.
 */
export function checkPrivilegeFlags(flags: PrivilegeFlagValues): number | undefined {
  resolveCredentials(flags.uid, flags.gid)
  return flags.umask === undefined ? undefined : parseUmask(flags.umask)
}
