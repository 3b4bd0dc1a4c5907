// Celery's MultiParser (celery/apps/multi.py, spec §9): from the parsed words
// to one node per name, each with its own options.
import { hostFormat, multiExpand, nodeSplit } from '../protocol/index.js'
import { MultiUsageError } from './errors.js'
import { mergeOptions, type OptionMap, type ParsedArgs } from './option-parser.js'

export interface NodeSpec {
  /** Full node name, `celery1@host`. */
  name: string
  /** The name the node was given as (`1` for ranges, `w1`), used for namespaces. */
  key: string
  /** This node's worker options, global then per-node, in Celery's order (no `-n`). */
  options: OptionMap
  passthrough: string[]
  append: string
}

export interface ExpandContext {
  hostname: string
}

/** `build_nodename`: `w1` → `<prefix>w1@<suffix>`; `w1@%h` → host-formatted. */
export function buildNodename(name: string, prefix: string, suffix: string, hostname: string): { key: string; nodename: string } {
  if (name.includes('@')) {
    const nodename = hostFormat(name, hostname)
    return { key: nodeSplit(nodename)[0], nodename }
  }
  return { key: name, nodename: hostFormat(`${prefix}${name}@${suffix}`, hostname) }
}

function pop(options: OptionMap, name: string): string | null | undefined {
  if (!options.has(name)) return undefined
  const v = options.get(name)!
  options.delete(name)
  return v
}

/** Splits `1-3`, `1,2`, `w1,w2` namespaces into one per node key; numbers become the node at that 1-based index. */
function expandNamespaces(parsed: ParsedArgs, keys: string[], ranges: boolean): Map<string, OptionMap> {
  const out = new Map<string, OptionMap>()
  const put = (key: string, opts: OptionMap) => out.set(key, mergeOptions(out.get(key) ?? new Map(), opts))
  for (const [ns, opts] of parsed.namespaces) {
    const parts = ns.includes(',') ? ns.split(',') : [ns]
    for (const part of parts) {
      const range = /^(\d+)-(\d+)$/.exec(part)
      if (ranges && range) {
        for (let n = Number(range[1]); n <= Number(range[2]); n++) put(indexKey(String(n), keys), opts)
      } else {
        put(/^\d+$/.test(part) ? indexKey(part, keys) : part, opts)
      }
    }
  }
  return out
}

function indexKey(ns: string, keys: string[]): string {
  const index = Number(ns) - 1
  if (index < 0) throw new MultiUsageError(`Indexes start at 1 got: '${ns}'`)
  const key = keys[index]
  if (key === undefined) throw new MultiUsageError(`No node at index '${ns}'`)
  return key
}

/** The node list of `tsq multi <command> <names...> <options...>`. */
export function expandNodes(parsed: ParsedArgs, ctx: ExpandContext): NodeSpec[] {
  // --cmd stays among the node's options: planNode reads it, and restart remembers it.
  const options: OptionMap = new Map(parsed.options)
  const append = pop(options, '--append') ?? ''
  const nOpt = pop(options, '-n')
  const hOpt = pop(options, '--hostname')
  const host = hOpt ?? nOpt ?? ctx.hostname
  let prefix = pop(options, '--prefix') ?? ''
  let suffix = pop(options, '--suffix') || host
  if (suffix === '""' || suffix === "''") suffix = ''
  const rangePrefix = pop(options, '--range-prefix') || 'celery'
  let names = parsed.values
  const ranges = names.length === 1 && /^\d+$/.test(names[0]!)
  if (ranges) {
    names = Array.from({ length: Number(names[0]) }, (_, i) => String(i + 1))
    prefix = rangePrefix
  }
  const built = names.map((name) => buildNodename(name, prefix, suffix, ctx.hostname))
  const namespaces = expandNamespaces(
    parsed,
    built.map((b) => b.key),
    ranges,
  )
  return built.map(({ key, nodename }) => {
    const ns = namespaces.has(nodename) ? nodename : key
    return { name: nodename, key, options: mergeOptions(options, namespaces.get(ns)), passthrough: [...parsed.passthrough], append }
  })
}

/** `build_expander`: %h/%p full name, %n/%N short name, %d host; %i/%I left for the worker. */
export function expander(nodename: string): (template: string) => string {
  return (template) => multiExpand(template, nodename)
}
