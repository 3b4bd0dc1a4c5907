// Celery's NamespacedOptionParser (celery/apps/multi.py, spec §9), with one
// extension: `--opt value` is understood when `--opt` is not a known boolean
// flag (Celery reads `value` as a node name there).

/** Option name with its dashes (`-c`, `--queues`) → value (null for a bare flag). Insertion order is kept. */
export type OptionMap = Map<string, string | null>

export interface ParsedArgs {
  /** Positional words: node names, or one number N for a range. */
  values: string[]
  /** Options for every node, in the order first given. */
  options: OptionMap
  /** `-c:1-3 10` → namespace `1-3` → `-c` = `10`. */
  namespaces: Map<string, OptionMap>
  /** Everything after `--`, verbatim. */
  passthrough: string[]
}

export interface ParseOptions {
  /** True for flags that never take a value (`--purge`, `-E`): the next word stays positional. */
  isBoolean?: (option: string) => boolean
}

export function parseMultiArgs(args: readonly string[], opts: ParseOptions = {}): ParsedArgs {
  const isBoolean = opts.isBoolean ?? (() => false)
  const out: ParsedArgs = { values: [], options: new Map(), namespaces: new Map(), passthrough: [] }
  const rargs = args.filter((a) => a !== '')
  const takesNext = (name: string, pos: number): boolean => {
    const next = rargs[pos + 1]
    return next !== undefined && !next.startsWith('-') && !isBoolean(name.split(':')[0]!)
  }
  for (let pos = 0; pos < rargs.length; pos++) {
    const arg = rargs[pos]!
    if (arg === '--') {
      out.passthrough = rargs.slice(pos + 1)
      break
    }
    if (arg.startsWith('--') && arg.length > 2) {
      const eq = arg.indexOf('=')
      if (eq >= 0) {
        add(out, arg.slice(0, eq), arg.slice(eq + 1))
      } else if (takesNext(arg, pos)) {
        add(out, arg, rargs[++pos]!)
      } else {
        add(out, arg, null)
      }
    } else if (arg.startsWith('-') && arg.length > 1) {
      if (takesNext(arg, pos)) add(out, arg, rargs[++pos]!)
      else add(out, arg, null)
    } else {
      out.values.push(arg)
    }
  }
  return out
}

function add(out: ParsedArgs, rawName: string, value: string | null): void {
  const colon = rawName.indexOf(':')
  if (colon < 0) {
    out.options.set(rawName, value)
    return
  }
  const name = rawName.slice(0, colon)
  const ns = rawName.slice(colon + 1)
  let dest = out.namespaces.get(ns)
  if (!dest) out.namespaces.set(ns, (dest = new Map()))
  dest.set(name, value)
}

/** Celery's `format_opt`: `--k=v`, `-k v`, or the bare flag; as argv words. */
export function formatOption(name: string, value: string | null): string[] {
  if (value === null || value === '') return [name]
  return name.startsWith('--') ? [`${name}=${value}`] : [name, value]
}

/** Every option of `base` keeps its place; the overrides replace values or are appended (Python's `OrderedDict(base, **ns)`). */
export function mergeOptions(base: OptionMap, overrides: OptionMap | undefined): OptionMap {
  const merged: OptionMap = new Map(base)
  for (const [k, v] of overrides ?? []) merged.set(k, v)
  return merged
}
