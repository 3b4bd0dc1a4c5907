import { PyFloat } from '../codecs/py-types.js'
import { codedError } from '../errors.js'

// Celery 5.2.6's remote-control command table (celery/worker/control.py,
// `Panel.meta`), read from the installed Python sources. The CLI uses it to type
// positional arguments exactly as `celery inspect|control` does.

export type ControlArgType = 'str' | 'int' | 'float' | 'strtobool'
export type ControlKind = 'inspect' | 'control'

export interface ControlCommandMeta {
  kind: ControlKind
  /** Hidden commands (hello) are answered but not offered by the CLI. */
  visible: boolean
  args: ReadonlyArray<readonly [name: string, type: ControlArgType]>
  /** The wire argument that collects the remaining positional arguments. */
  variadic?: string
  signature?: string
  alias?: string
}

const inspect = (extra: Partial<ControlCommandMeta> = {}): ControlCommandMeta => ({ kind: 'inspect', visible: true, args: [], ...extra })
const control = (extra: Partial<ControlCommandMeta> = {}): ControlCommandMeta => ({ kind: 'control', visible: true, args: [], ...extra })

export const CONTROL_COMMANDS: Readonly<Record<string, ControlCommandMeta>> = {
  active: inspect({ alias: 'dump_active' }),
  active_queues: inspect(),
  clock: inspect(),
  conf: inspect({ args: [['with_defaults', 'strtobool']], signature: '[include_defaults=False]', alias: 'dump_conf' }),
  hello: inspect({ visible: false }),
  memdump: inspect({ args: [['samples', 'int']], signature: '[n_samples=10]' }),
  memsample: inspect(),
  objgraph: inspect({
    args: [
      ['type', 'str'],
      ['num', 'int'],
      ['max_depth', 'int'],
    ],
    signature: '[object_type=Request] [num=200 [max_depth=10]]',
  }),
  ping: inspect(),
  query_task: inspect({ variadic: 'ids', signature: '[id1 [id2 [... [idN]]]]' }),
  registered: inspect({ variadic: 'taskinfoitems', signature: '[attr1 [attr2 [... [attrN]]]]', alias: 'dump_tasks' }),
  report: inspect(),
  reserved: inspect({ alias: 'dump_reserved' }),
  revoked: inspect({ alias: 'dump_revoked' }),
  scheduled: inspect({ alias: 'dump_schedule' }),
  stats: inspect(),
  // tsq's own, beyond Celery's table: each concurrency key's backlog, running count and limit (docs/concurrency-keys.md).
  concurrency: inspect(),

  add_consumer: control({
    args: [
      ['queue', 'str'],
      ['exchange', 'str'],
      ['exchange_type', 'str'],
      ['routing_key', 'str'],
    ],
    signature: '<queue> [exchange [type [routing_key]]]',
  }),
  autoscale: control({
    args: [
      ['max', 'int'],
      ['min', 'int'],
    ],
    signature: '[max [min]]',
  }),
  cancel_consumer: control({ args: [['queue', 'str']], signature: '<queue>' }),
  disable_events: control(),
  election: control(),
  enable_events: control(),
  heartbeat: control(),
  pool_grow: control({ args: [['n', 'int']], signature: '[N=1]' }),
  pool_restart: control(),
  pool_shrink: control({ args: [['n', 'int']], signature: '[N=1]' }),
  rate_limit: control({
    args: [
      ['task_name', 'str'],
      ['rate_limit', 'str'],
    ],
    signature: '<task_name> <rate_limit (e.g., 5/s | 5/m | 5/h)>',
  }),
  revoke: control({ variadic: 'task_id', signature: '[id1 [id2 [... [idN]]]]' }),
  shutdown: control(),
  terminate: control({ args: [['signal', 'str']], variadic: 'task_id', signature: '<signal> [id1 [id2 [... [idN]]]]' }),
  time_limit: control({
    args: [
      ['task_name', 'str'],
      ['soft', 'float'],
      ['hard', 'float'],
    ],
    signature: '<task_name> <soft_secs> [hard_secs]',
  }),
}

export function visibleCommands(kind: ControlKind): string[] {
  return Object.entries(CONTROL_COMMANDS)
    .filter(([, meta]) => meta.kind === kind && meta.visible)
    .map(([name]) => name)
    .sort()
}

export class ControlArgumentError extends codedError('BAD_ARGUMENT') {}

/** Python's distutils strtobool, which `celery inspect conf` uses. */
function strtobool(value: string): boolean {
  const v = value.toLowerCase()
  if (['y', 'yes', 't', 'true', 'on', '1'].includes(v)) return true
  if (['n', 'no', 'f', 'false', 'off', '0'].includes(v)) return false
  throw new ControlArgumentError(`invalid truth value ${JSON.stringify(value)}`)
}

function convert(method: string, name: string, type: ControlArgType, raw: string): unknown {
  switch (type) {
    case 'str':
      return raw
    case 'strtobool':
      return strtobool(raw)
    case 'int': {
      if (!/^[+-]?\d+$/.test(raw.trim()))
        throw new ControlArgumentError(`${method}: argument ${name} must be an integer, got ${JSON.stringify(raw)}`)
      return Number.parseInt(raw, 10)
    }
    case 'float': {
      const n = Number(raw)
      if (raw.trim() === '' || Number.isNaN(n))
        throw new ControlArgumentError(`${method}: argument ${name} must be a number, got ${JSON.stringify(raw)}`)
      // Python's float('5') is 5.0 on the wire, and workers echo it back as such.
      return new PyFloat(n)
    }
  }
}

/**
 * `celery/bin/control.py::_compile_arguments`: positional CLI words are typed by
 * the command's `args`, the rest go to its variadic argument. Unknown methods
 * (custom commands) take `key=value` words, values parsed as JSON when they can be.
 */
export function compileArguments(method: string, words: readonly string[]): Record<string, unknown> {
  const meta = CONTROL_COMMANDS[method]
  const args: Record<string, unknown> = {}
  if (!meta) {
    for (const word of words) {
      const eq = word.indexOf('=')
      if (eq <= 0) throw new ControlArgumentError(`custom command ${method} takes key=value arguments, got ${JSON.stringify(word)}`)
      const raw = word.slice(eq + 1)
      let value: unknown = raw
      try {
        value = JSON.parse(raw)
      } catch {
        // A bare word is a string, as a shell user would expect.
      }
      args[word.slice(0, eq)] = value
    }
    return args
  }
  let i = 0
  for (; i < words.length; i++) {
    const spec = meta.args[i]
    if (!spec) {
      if (meta.variadic) break
      throw new ControlArgumentError(`Command '${method}' takes arguments: ${meta.signature ?? '(none)'}`)
    }
    args[spec[0]] = convert(method, spec[0], spec[1], words[i]!)
  }
  if (meta.variadic) args[meta.variadic] = words.slice(i)
  return args
}
