// Python's pprint.pformat (width 80, indent 1, sorted dicts) for JSON-ish
// values: what Celery's `amqp basic.get` prints a message with. A port of
// CPython 3's PrettyPrinter for the types a message holds (dict, list, str,
// scalars): dicts and lists break one item a line, long strings break at
// whitespace into adjacent literals, as pprint does.
import { comparePyStr } from './py-types.js'
import { pyRepr, pyStrRepr } from './python-repr.js'

const WIDTH = 80

function isDict(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Uint8Array) &&
    !(value instanceof Date) &&
    Object.getPrototypeOf(value) === Object.prototype
  )
}

function sortedEntries(dict: Record<string, unknown>): Array<[string, unknown]> {
  return Object.entries(dict)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => comparePyStr(a, b))
}

/** Reprs of the containers of the value being formatted: each is needed again at every level above it. */
let reprCache: Map<object, string> | null = null

const isContainer = (v: unknown): v is object => isDict(v) || Array.isArray(v)

/** pprint's `_safe_repr`: repr with dict keys sorted, at any depth; children first with a stack of its own (no recursion). */
function safeRepr(root: unknown): string {
  if (!isContainer(root)) return pyRepr(root)
  const cache = reprCache ?? new Map<object, string>()
  const rep = (v: unknown): string => (isContainer(v) ? cache.get(v)! : pyRepr(v))
  const stack: object[] = [root]
  while (stack.length) {
    const node = stack[stack.length - 1]!
    if (cache.has(node)) {
      stack.pop()
      continue
    }
    const entries = isDict(node) ? sortedEntries(node) : null
    const children = entries ? entries.map(([, v]) => v) : (node as unknown[])
    let pending = false
    for (const child of children) {
      if (isContainer(child) && !cache.has(child)) {
        stack.push(child)
        pending = true
      }
    }
    if (pending) continue
    cache.set(node, entries ? `{${entries.map(([k, v]) => `${pyStrRepr(k)}: ${rep(v)}`).join(', ')}}` : `[${children.map(rep).join(', ')}]`)
    stack.pop()
  }
  return cache.get(root)!
}

/** Levels pformat breaks into lines; deeper than this a value stays on one line (Python's pprint would hit its recursion limit). */
const MAX_PRETTY_LEVELS = 100

function format(value: unknown, indent: number, allowance: number, level: number): string {
  const rep = safeRepr(value)
  if (rep.length <= WIDTH - indent - allowance || level >= MAX_PRETTY_LEVELS) return rep
  if (isDict(value) && Object.keys(value).length) return `{${dictItems(sortedEntries(value), indent, allowance + 1, level + 1)}}`
  if (Array.isArray(value) && value.length) return `[${listItems(value, indent, allowance + 1, level + 1)}]`
  if (typeof value === 'string' && value.length) return stringChunks(value, indent, allowance, level + 1)
  return rep
}

function dictItems(items: Array<[string, unknown]>, indent: number, allowance: number, level: number): string {
  const inner = indent + 1
  return items
    .map(([key, value], i) => {
      const keyRep = pyStrRepr(key)
      const last = i === items.length - 1
      return `${keyRep}: ${format(value, inner + keyRep.length + 2, last ? allowance : 1, level)}`
    })
    .join(`,\n${' '.repeat(inner)}`)
}

function listItems(items: unknown[], indent: number, allowance: number, level: number): string {
  const inner = indent + 1
  return items.map((item, i) => format(item, inner, i === items.length - 1 ? allowance : 1, level)).join(`,\n${' '.repeat(inner)}`)
}

/** pprint's `_pprint_str`: lines, then words, packed into literals that fit. */
function stringChunks(text: string, indent: number, allowance: number, level: number): string {
  const chunks: string[] = []
  const lines = text.match(/[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$/g) ?? [text]
  if (level === 1) {
    indent += 1
    allowance += 1
  }
  const maxWidth = WIDTH - indent
  let maxWidth1 = maxWidth
  let lastRep = ''
  lines.forEach((line, i) => {
    lastRep = pyStrRepr(line)
    const lastLine = i === lines.length - 1
    if (lastLine) maxWidth1 -= allowance
    if (lastRep.length <= maxWidth1) {
      chunks.push(lastRep)
      return
    }
    const parts = line.match(/\S*\s*/g)!.filter((p) => p !== '')
    let maxWidth2 = maxWidth
    let current = ''
    parts.forEach((part, j) => {
      const candidate = current + part
      if (j === parts.length - 1 && lastLine) maxWidth2 -= allowance
      if (pyStrRepr(candidate).length > maxWidth2) {
        if (current) chunks.push(pyStrRepr(current))
        current = part
      } else current = candidate
    })
    if (current) chunks.push(pyStrRepr(current))
  })
  if (chunks.length === 1) return lastRep
  const joined = chunks.join(`\n${' '.repeat(indent)}`)
  return level === 1 ? `(${joined})` : joined
}

/** `pprint.pformat(value)`. */
export function pformat(value: unknown): string {
  reprCache = new Map()
  try {
    return format(value, 0, 0, 0)
  } finally {
    reprCache = null
  }
}
