// Depth and size limits for what a message carries, checked before anything
// walks it recursively: a 12 KB body nested 6,000 levels parses (JSON.parse
// does not recurse) but overflows the stack of whatever walks it next (the
// pool's IPC, repr, the control replies). Every check here is iterative.

import { MalformedMessageError } from '../errors.js'

export interface MessageLimits {
  /** Deepest nesting of lists and mappings in a body or header table. */
  maxDepth: number
  /** Largest body, in bytes, as delivered and after decompression. */
  maxBytes: number
}

/**
 * Python's recursion limit (1000) is what stops Celery: its json.loads fails
 * past ~997 levels, so no Python client can send deeper, and tsq's own
 * recursive walks (dumps, repr, structured clone) hold more than twice this.
 * Also the highest worker_message_max_depth: a setting may lower it only, so
 * those walks (the pool channel, inspect replies) always have room.
 */
export const DEFAULT_MAX_DEPTH = 1000
/** No task needs 64 MiB of arguments. */
export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024

export const DEFAULT_MESSAGE_LIMITS: Readonly<MessageLimits> = Object.freeze({ maxDepth: DEFAULT_MAX_DEPTH, maxBytes: DEFAULT_MAX_BYTES })

/**
 * A message past a limit: malformed (rejected, not requeued), said in the
 * words Celery's on_decode_error uses for the same body. `pythonRepr` is the
 * exception as Celery's line shows it inside DecodeError(...).
 */
export class MessageLimitError extends MalformedMessageError {
  override readonly code: string = 'MESSAGE_LIMIT'
  readonly pythonRepr: string
  constructor(message: string, pythonType: 'RecursionError' | 'ValueError') {
    super(message)
    this.pythonRepr = `${pythonType}('${message.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}')`
  }
}

export function depthError(what: string, maxDepth: number): MessageLimitError {
  return new MessageLimitError(
    `maximum nesting depth ${maxDepth} exceeded while decoding the ${what} (worker_message_max_depth)`,
    'RecursionError',
  )
}

export function sizeError(what: string, bytes: number, maxBytes: number): MessageLimitError {
  return new MessageLimitError(`${what} of ${bytes} bytes exceeds the limit of ${maxBytes} bytes (worker_message_max_bytes)`, 'ValueError')
}

/**
 * Whether JSON text nests deeper than maxDepth: one pass over the text,
 * brackets counted outside strings. Text shorter than the limit cannot be
 * deeper (each level takes a bracket), so most messages are not scanned.
 */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  const n = text.length
  if (n <= maxDepth) return false
  let depth = 0
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      // A string: skipped to its closing quote, escapes included.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i)
        if (d === 0x5c) i++
        else if (d === 0x22) break
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}

function isContainer(v: unknown): v is object {
  return v !== null && typeof v === 'object' && !ArrayBuffer.isView(v) && !(v instanceof Date) && !(v instanceof ArrayBuffer)
}

/**
 * What a decoded value (arrays, plain objects, Maps, Sets) breaks, if
 * anything: nesting deeper than maxDepth, or more than maxNodes containers
 * and items walked (shared references count each time they are met, as a
 * walker that expands them would). An explicit stack, never recursion; a
 * cycle counts as too deep.
 */
export function valueLimitExceeded(value: unknown, maxDepth: number, maxNodes = Number.POSITIVE_INFINITY): 'depth' | 'size' | null {
  if (!isContainer(value)) return null
  // Runs per message (its headers): nothing allocated until a container holds another.
  const nodes: object[] = []
  const depths: number[] = []
  let node: object | undefined = value
  let depth = 1
  let seen = 1
  while (node !== undefined) {
    if (depth > maxDepth) return 'depth'
    if (Array.isArray(node)) {
      seen += node.length
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i]
        if (typeof child === 'object' && child !== null && isContainer(child)) {
          nodes.push(child)
          depths.push(depth + 1)
        }
      }
    } else if (node instanceof Map || node instanceof Set) {
      seen += node.size
      for (const child of node.values()) {
        if (typeof child === 'object' && child !== null && isContainer(child)) {
          nodes.push(child)
          depths.push(depth + 1)
        }
      }
    } else {
      const record = node as Record<string, unknown>
      for (const k in record) {
        seen++
        const child = record[k]
        if (typeof child === 'object' && child !== null && isContainer(child)) {
          nodes.push(child)
          depths.push(depth + 1)
        }
      }
    }
    if (seen > maxNodes) return 'size'
    node = nodes.pop()
    depth = depths.pop() ?? 0
  }
  return null
}

/**
 * Throws MessageLimitError when a decoded value (a header table, a msgpack
 * or YAML body) is too deep, or expands to more items than its limit of
 * bytes could hold as JSON (each item takes at least one).
 */
export function checkValueLimits(value: unknown, limits: MessageLimits, what: string): void {
  const broken = valueLimitExceeded(value, limits.maxDepth, limits.maxBytes)
  if (broken === 'depth') throw depthError(what, limits.maxDepth)
  if (broken === 'size')
    throw new MessageLimitError(`${what} expands to more than ${limits.maxBytes} items (worker_message_max_bytes)`, 'ValueError')
}

/**
 * JSON text from outside that is not a task body (a control request or reply,
 * a result, a beat entry, a state file): refused in one line when longer than
 * `maxLength` characters or nested deeper than `maxDepth`, before it is parsed.
 */
export function checkJsonText(
  text: string,
  what: string,
  maxLength: number = DEFAULT_MAX_BYTES,
  maxDepth: number = DEFAULT_MAX_DEPTH,
): void {
  if (text.length > maxLength)
    throw new MessageLimitError(`${what} refused: ${text.length} characters, over the limit of ${maxLength}`, 'ValueError')
  if (jsonDepthExceeds(text, maxDepth))
    throw new MessageLimitError(`${what} refused: nests deeper than ${maxDepth} levels`, 'RecursionError')
}

/** Throws MessageLimitError when JSON text is too deep to be decoded. */
export function checkJsonDepth(text: string, maxDepth: number, what: string): void {
  if (jsonDepthExceeds(text, maxDepth)) throw depthError(what, maxDepth)
}

/**
 * Resolves a limits setting (worker_message_max_depth, worker_message_max_bytes):
 * a whole number from 1 to `max`, or the default when unset.
 */
export function limitSetting(raw: unknown, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (raw === undefined || raw === null || raw === '') return fallback
  const n = typeof raw === 'string' ? Number(raw) : raw
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > max)
    throw new RangeError(`${name} = ${JSON.stringify(raw)}: expected a whole number from 1 to ${max}`)
  return n
}

/**
 * The YAML library recurses per level while it builds values, and fails (or
 * worse, runs out of memory) a few hundred levels down, so YAML bodies get
 * this lower ceiling whatever maxDepth says.
 */
export const YAML_MAX_DEPTH = 500

/**
 * An upper bound on a YAML text's nesting, from one pass: flow brackets open
 * outside quotes, plus, per line, its indentation and the block indicators
 * (`- `, `? `) that open a level on the same line. A real document nests no
 * deeper than this; one that says more is refused before the parser sees it.
 */
export function yamlDepthBound(text: string): number {
  const n = text.length
  let flow = 0
  let maxFlow = 0
  let maxBlock = 0
  let lineStart = true
  let indent = 0
  let blockOnLine = 0
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x0a) {
      lineStart = true
      indent = 0
      blockOnLine = 0
      continue
    }
    if (lineStart) {
      if (c === 0x20) {
        indent++
        continue
      }
      // `- `, `? ` (and `-` / `?` at the end of a line) open a block level, possibly several on one line.
      if ((c === 0x2d || c === 0x3f) && (i + 1 >= n || text.charCodeAt(i + 1) === 0x20 || text.charCodeAt(i + 1) === 0x0a)) {
        blockOnLine++
        if (indent + blockOnLine > maxBlock) maxBlock = indent + blockOnLine
        indent++
        continue
      }
      lineStart = false
      if (indent + blockOnLine + 1 > maxBlock) maxBlock = indent + blockOnLine + 1
    }
    if (c === 0x22 || c === 0x27) {
      // A quoted scalar: its brackets are text ('' escapes a single quote, \ a double).
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i)
        if (c === 0x22 && d === 0x5c) i++
        else if (d === c) {
          if (c === 0x27 && text.charCodeAt(i + 1) === 0x27) i++
          else break
        }
      }
    } else if (c === 0x23 && (i === 0 || text.charCodeAt(i - 1) === 0x20 || text.charCodeAt(i - 1) === 0x09)) {
      // A comment, to the end of the line.
      while (i + 1 < n && text.charCodeAt(i + 1) !== 0x0a) i++
    } else if (c === 0x5b || c === 0x7b) {
      if (++flow > maxFlow) maxFlow = flow
    } else if ((c === 0x5d || c === 0x7d) && flow > 0) {
      flow--
    }
  }
  return maxBlock + maxFlow
}

/** Throws MessageLimitError when YAML text may nest deeper than min(maxDepth, YAML_MAX_DEPTH). */
export function checkYamlDepth(text: string, maxDepth: number, what: string): void {
  const limit = Math.min(maxDepth, YAML_MAX_DEPTH)
  if (text.length > limit && yamlDepthBound(text) > limit) throw depthError(what, limit)
}
