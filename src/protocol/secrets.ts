// The one place secrets are masked and control characters escaped for display:
// `inspect conf`, `tsq report`, error messages, log lines and DEBUG output all
// go through these. Celery's own masking is kombu's maybe_sanitize_url and
// celery.app.utils.filter_hidden_settings; this masks what they miss too (any
// URL-valued setting, lists of URLs, `?password=` query parameters).

/** Celery's HIDDEN_SETTINGS: a setting whose name matches has its whole value hidden. */
export const HIDDEN_SETTINGS = /API|TOKEN|KEY|SECRET|PASS|PROFANITIES_LIST|SIGNATURE|DATABASE/i
/** What `inspect conf` and `report` show in place of a secret (Celery's `'*' * 8`). */
export const SETTING_MASK = '********'
/** What logs, banners and errors show in place of a URL's password (kombu's as_uri default). */
export const URL_MASK = '**'
/** A URL query parameter that carries a secret (`?password=`, `?token=`, `?sasl_password=`). */
const SECRET_PARAM = /PASS|PWD|SECRET|TOKEN|KEY|API|SIGNATURE|CREDENTIAL/i

const SCHEME = /^(\s*[a-z][a-z0-9+.-]*:\/\/)/i

function maskQuery(query: string, mask: string): string {
  return query.replace(/([?&;])([^=&;#]*)=([^&;#]*)/g, (whole, sep: string, name: string) =>
    SECRET_PARAM.test(decodeSafe(name)) ? `${sep}${name}=${mask}` : whole,
  )
}

function decodeSafe(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** One URL: the password of its user-info and the values of secret query parameters become `mask`. */
function maskOne(url: string, mask: string): string {
  const scheme = SCHEME.exec(url)
  if (!scheme) return url
  const rest = url.slice(scheme[1]!.length)
  // The user-info ends at the last '@' before the first '/': a password may hold '@', '?' or '#' unescaped.
  const slash = rest.indexOf('/')
  const userEnd = rest.lastIndexOf('@', slash === -1 ? rest.length : slash)
  let userinfo = userEnd >= 0 ? rest.slice(0, userEnd) : ''
  const afterUser = userEnd >= 0 ? rest.slice(userEnd) : rest
  const hostEnd = afterUser.search(/[/?#]/)
  const host = hostEnd >= 0 ? afterUser.slice(0, hostEnd) : afterUser
  let tail = hostEnd >= 0 ? afterUser.slice(hostEnd) : ''
  const colon = userinfo.indexOf(':')
  if (colon >= 0) userinfo = `${userinfo.slice(0, colon)}:${mask}`
  const head = userEnd >= 0 ? userinfo + host : host
  const q = tail.indexOf('?')
  if (q >= 0) tail = tail.slice(0, q) + maskQuery(tail.slice(q), mask)
  return `${scheme[1]}${head}${tail}`
}

/**
 * kombu's `as_uri(include_password=False)`: `amqp://guest:guest@host//`
 * prints as `amqp://guest:**@host//`; a failover list (`a;b`) keeps its shape,
 * each URL masked; `?password=x` becomes `?password=**`.
 */
export function maskUrl(url: string, mask: string = URL_MASK): string {
  if (!url.includes('://')) return url
  return url
    .split(';')
    .map((u) => maskOne(u, mask))
    .join(';')
}

/** Whether a string is a URL that holds a secret (a password, or a secret query parameter). */
export function urlHasSecret(value: string): boolean {
  return value.includes('://') && maskUrl(value, '\u0000') !== value
}

const URL_IN_TEXT = /[a-z][a-z0-9+.-]*:\/\/[^\s'"<>`]+/gi

/** Every URL inside free text (an error message, a log line) masked. */
export function maskUrlsInText(text: string, mask: string = URL_MASK): string {
  if (!text.includes('://')) return text
  return text.replace(URL_IN_TEXT, (u) => maskOne(u, mask))
}

/** A setting's value as `inspect conf` and `report` show it: Celery's filter_hidden_settings, plus every URL-valued value masked. */
export function maskSetting(key: string, value: unknown, mask: string = SETTING_MASK): unknown {
  if (isMapping(value)) return filterHiddenSettings(value, mask)
  if (HIDDEN_SETTINGS.test(key)) return mask
  if (typeof value === 'string') return maskUrl(value, mask)
  if (Array.isArray(value)) return value.map((v) => maskSetting('', v, mask))
  return value
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
}

/** Celery's filter_hidden_settings over a whole conf (nested mappings filtered the same way). */
export function filterHiddenSettings(conf: Record<string, unknown>, mask: string = SETTING_MASK): Record<string, unknown> {
  return Object.fromEntries(Object.entries(conf).map(([key, value]) => [key, maskSetting(key, value, mask)]))
}

/** `name = value` for an error message about a setting, the value masked as `inspect conf` would show it. */
export function shownSetting(name: string, value: unknown): string {
  const leaf = name.slice(name.lastIndexOf('.') + 1)
  const shown = maskSetting(leaf, value)
  // A hidden name's value is not quoted: the mask must not read as the string given.
  if (shown === SETTING_MASK && value !== SETTING_MASK) return `${name} = ${SETTING_MASK}`
  return `${name} = ${JSON.stringify(shown) ?? String(value)}`
}

// C0 controls, DEL, C1 controls, the line/paragraph separators and the bidi
// overrides: what could end a log line, move the cursor or reorder the text.
// eslint-disable-next-line no-control-regex -- matches the control characters it escapes or strips
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g
// eslint-disable-next-line no-control-regex -- matches the control characters it escapes or strips
const CONTROL_BUT_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

function escapeChar(c: string): string {
  const named = NAMED[c]
  if (named) return named
  const code = c.charCodeAt(0)
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
}

/**
 * A value from a message (a task id, a name, an args repr) made safe for one
 * log line: control characters as Python's repr writes them (`\n`, `\x1b`),
 * the rest unchanged (backslashes too, so a repr is not escaped twice).
 */
export function escapeControl(text: string): string {
  CONTROL.lastIndex = 0
  return CONTROL.test(text) ? text.replace(CONTROL, escapeChar) : text
}

/** The same for text whose newlines and tabs are its own (a traceback, a multi-line message): every other control character escaped. */
export function escapeControlKeepLines(text: string): string {
  CONTROL_BUT_LINES.lastIndex = 0
  return CONTROL_BUT_LINES.test(text) ? text.replace(CONTROL_BUT_LINES, escapeChar) : text
}

/** `name[id]` as log lines show a task, both escaped: a newline in an id must not start a line of its own. */
export function taskLabel(name: unknown, id: unknown): string {
  return `${escapeControl(String(name))}[${escapeControl(String(id))}]`
}
