// ioredis logs through the `debug` package when DEBUG names it, and writes each
// command with its arguments: `auth([ 'password' ])`. Every line goes through
// this filter first, so DEBUG=* never prints a password. Imported for its effect
// by each module that makes an ioredis client.
import createDebug from 'debug'
import { formatWithOptions } from 'node:util'
import { escapeControlKeepLines, maskUrlsInText, URL_MASK } from '../../protocol/index.js'

/** Commands whose arguments hold credentials: AUTH, HELLO ... AUTH, ACL SETUSER, CONFIG SET requirepass, MIGRATE ... AUTH. */
const CREDENTIAL_COMMAND = /(\b(?:auth|hello|acl|config|migrate)\()(.*)$/gim
/** `password: 'x'` as util.inspect writes an options object. */
const PASSWORD_FIELD = /(\b[\w]*(?:password|passwd|secret|token)[\w]*['"]?\s*[:=]\s*)(['"])(?:\\.|(?!\2).)*\2/gi

/** One DEBUG line with its secrets masked and control characters from values (a task name's ESC) escaped. */
export function redactDebugLine(line: string): string {
  return escapeControlKeepLines(maskUrlsInText(line))
    .replace(CREDENTIAL_COMMAND, (_m, head: string) => `${head}[${URL_MASK}])`)
    .replace(PASSWORD_FIELD, (_m, head: string, quote: string) => `${head}${quote}${URL_MASK}${quote}`)
}

const filtered = Symbol.for('tsq.debugFiltered')
const holder = createDebug as unknown as Record<symbol, boolean>
if (!holder[filtered]) {
  holder[filtered] = true
  // debug's own log (debug/src/node.js), with the redaction before the write.
  createDebug.log = (...args: unknown[]): void => {
    process.stderr.write(`${redactDebugLine(formatWithOptions(createDebug.inspectOpts ?? {}, ...args))}\n`)
  }
}
