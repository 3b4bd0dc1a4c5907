// `tsq multi <command> ...`: Celery's MultiTool (celery/bin/multi.py) over
// tsq's worker. Parses its own argv, as Celery's does, because per-node
// options such as `-c:1-3 10` are not flags any parser knows.
import { constants as osConstants } from 'node:os'
import { resolve } from 'node:path'
import { restartNodes, startNodes, stopNodes, type ClusterDeps, type NodeResult } from './cluster.js'
import { MultiUsageError } from './errors.js'
import { expandNodes, expander, type NodeSpec } from './node-list.js'
import { planNode, type NodePlan, type PlanContext } from './node-plan.js'
import { mergeOptions, parseMultiArgs } from './option-parser.js'
import type { MultiOutput } from './output.js'
import { findRecord, recordOptions } from './records.js'

export const MULTI_COMMANDS = [
  'start',
  'stop',
  'stopwait',
  'stop_verify',
  'restart',
  'kill',
  'show',
  'get',
  'names',
  'expand',
  'help',
] as const

export interface ReservedOptions {
  nosplash: boolean
  quiet: boolean
  verbose: boolean
  noColor: boolean
  json: boolean
  /** `--timeout`: seconds for start's ping wait and stopwait's wait. */
  timeout: number | null
}

const RESERVED_BOOLEANS: Record<string, keyof Omit<ReservedOptions, 'timeout'>> = {
  '--nosplash': 'nosplash',
  '--quiet': 'quiet',
  '-q': 'quiet',
  '--verbose': 'verbose',
  '--no-color': 'noColor',
  '--json': 'json',
  '-j': 'json',
}

/** Takes multi's own flags out of argv (before `--` only), as Celery's `_handle_reserved_options`. */
export function takeReservedOptions(argv: readonly string[]): { argv: string[]; reserved: ReservedOptions } {
  const reserved: ReservedOptions = { nosplash: false, quiet: false, verbose: false, noColor: false, json: false, timeout: null }
  const out: string[] = []
  const end = argv.indexOf('--')
  const head = end < 0 ? argv : argv.slice(0, end)
  for (let i = 0; i < head.length; i++) {
    const a = head[i]!
    const key = RESERVED_BOOLEANS[a]
    if (key) {
      reserved[key] = true
      continue
    }
    let raw: string | undefined
    if (a === '--timeout') raw = head[++i]
    else if (a.startsWith('--timeout=')) raw = a.slice('--timeout='.length)
    else {
      out.push(a)
      continue
    }
    const n = Number(raw)
    if (raw === undefined || !Number.isFinite(n) || n <= 0)
      throw new MultiUsageError(`--timeout must be seconds greater than 0, got ${JSON.stringify(raw ?? '')}`)
    reserved.timeout = n
  }
  return { argv: end < 0 ? out : [...out, ...argv.slice(end)], reserved }
}

/** Celery's `_find_sig_argument`: the last `-9`, `-KILL` or `-SIGKILL` (uppercase); taken out of argv. */
export function takeSignal(argv: readonly string[], fallback: NodeJS.Signals = 'SIGTERM'): { argv: string[]; signal: NodeJS.Signals } {
  const signals = osConstants.signals as Record<string, number>
  const byNumber = new Map(Object.entries(signals).map(([name, num]) => [num, name as NodeJS.Signals]))
  let signal = fallback
  const end = argv.indexOf('--')
  const out: string[] = []
  argv.forEach((a, i) => {
    if (end < 0 || i < end) {
      const digit = /^-(\d)$/.exec(a)
      const name = /^-(?:SIG)?([A-Z][A-Z0-9]+)$/.exec(a)
      if (digit && byNumber.has(Number(digit[1]))) {
        signal = byNumber.get(Number(digit[1]))!
        return
      }
      if (name && `SIG${name[1]}` in signals) {
        signal = `SIG${name[1]}` as NodeJS.Signals
        return
      }
    }
    out.push(a)
  })
  return { argv: out, signal }
}

export interface MultiToolDeps extends Omit<ClusterDeps, 'out'> {
  script: string
  cwd: string
  logDir: string
  version: string
  /** Worker flags that take no value, so `--purge w1` keeps `w1` a node name. */
  isBoolean: (option: string) => boolean
  out: (reserved: ReservedOptions) => MultiOutput
}

export interface MultiRun {
  exitCode: number
  /** The document for --json. */
  json: unknown
}

export const USAGE = `Usage: tsq multi <command> [nodes...] [options] [-- passthrough]

Commands:
  start      start each node (detached) and wait until it answers ping
  stop       send each node a signal (default TERM; -9, -KILL, -SIGINT...) without waiting
  stopwait   stop, then wait until every node is gone (--timeout N to give up)
  restart    stopwait, then start each node again with its remembered options
  kill       send KILL to each node
  show       print each node's full command
  get NODE   print one node's arguments
  names      print the node names
  expand T   print the template T expanded for each node (%h %n %N %d %p)

Nodes: a count (3 → celery1..celery3, see --range-prefix), or names (w1 w2, w1@%h, w1@example.com).
Per-node options: -c:1-3 10, -c:w1 4, -Q:w1,w2 a,b, --queues:w1=a,b.
Multi's own options: --hostname/-n, --prefix, --suffix, --range-prefix, --append, --timeout,
  --json/-j, --quiet/-q, --verbose, --no-color, --nosplash, --cmd (the worker command node runs,
  default tsq's own 'bin/run.js worker --detach'). Everything else goes to each worker.`

function specsFrom(argv: string[], deps: MultiToolDeps): NodeSpec[] {
  const parsed = parseMultiArgs(argv, { isBoolean: deps.isBoolean })
  return expandNodes(parsed, { hostname: deps.hostname })
}

/** Each node's plan; with `remembered`, the options stored at its last start come first and the ones given now override them. */
function plansFrom(specs: NodeSpec[], deps: MultiToolDeps, remembered: boolean): NodePlan[] {
  return specs.map((spec) => {
    const ctx: PlanContext = { executable: deps.executable, script: deps.script, cwd: deps.cwd, runDir: deps.runDir, logDir: deps.logDir }
    if (remembered) {
      const given = spec.options.get('--pidfile')
      const record = findRecord(spec.name, deps.runDir, given ? resolve(deps.cwd, expander(spec.name)(given)) : null)
      if (record) {
        ctx.cwd = record.cwd
        spec = {
          ...spec,
          options: mergeOptions(recordOptions(record), spec.options),
          passthrough: spec.passthrough.length ? spec.passthrough : record.passthrough,
          append: spec.append || record.append,
        }
      }
    }
    return planNode(spec, ctx)
  })
}

function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}

const failed = (results: NodeResult[]) => results.some((r) => r.status === 'FAILED' || r.status === 'TIMEOUT')

export async function runMulti(rawArgv: readonly string[], deps: MultiToolDeps): Promise<MultiRun> {
  const { argv: args, reserved } = takeReservedOptions(rawArgv)
  const out = deps.out(reserved)
  const command = args[0]
  if (!command || command.startsWith('-')) throw new MultiUsageError(`missing command: one of ${MULTI_COMMANDS.join(', ')}\n${USAGE}`)
  const rest = args.slice(1)
  const cdeps: ClusterDeps = { ...deps, out }
  const splash = () => {
    if (!reserved.nosplash) out.note(`tsq multi v${deps.version}`)
  }
  switch (command) {
    case 'help':
      out.say(USAGE)
      return { exitCode: 0, json: { usage: USAGE } }
    case 'names': {
      const names = specsFrom(rest, deps).map((s) => s.name)
      if (names.length) out.say(names.join('\n'))
      return { exitCode: 0, json: names }
    }
    case 'show': {
      const plans = plansFrom(specsFrom(rest, deps), deps, false)
      if (plans.length) out.say(plans.map((p) => [p.executable, ...p.argv].map(shellWord).join(' ')).join('\n'))
      return {
        exitCode: 0,
        json: plans.map((p) => ({ node: p.name, argv: [p.executable, ...p.argv], pidfile: p.pidfile, logfile: p.logfile })),
      }
    }
    case 'get': {
      const [wanted, ...more] = rest
      if (!wanted) throw new MultiUsageError('get needs a node name: tsq multi get <node> [nodes...] [options]')
      const plan = plansFrom(specsFrom(more, deps), deps, false).find((p) => p.name === wanted)
      if (!plan) {
        out.warn(`unknown node ${wanted}`)
        return { exitCode: 1, json: null }
      }
      out.say(plan.argv.map(shellWord).join(' '))
      return { exitCode: 0, json: { node: plan.name, argv: plan.argv } }
    }
    case 'expand': {
      const [template, ...more] = rest
      if (template === undefined) throw new MultiUsageError('expand needs a template: tsq multi expand <template> [nodes...]')
      const lines = specsFrom(more, deps).map((s) => expander(s.name)(template))
      if (lines.length) out.say(lines.join('\n'))
      return { exitCode: 0, json: lines }
    }
    case 'start': {
      splash()
      const results = await startNodes(plansFrom(specsFrom(rest, deps), deps, false), cdeps, reserved.timeout ?? 60)
      return { exitCode: failed(results) ? 1 : 0, json: results }
    }
    case 'stop':
    case 'stopwait':
    case 'stop_verify':
    case 'kill': {
      splash()
      const { argv, signal } = command === 'kill' ? { argv: rest, signal: 'SIGKILL' as const } : takeSignal(rest)
      const wait = command === 'stopwait' || command === 'stop_verify'
      const results = await stopNodes(plansFrom(specsFrom(argv, deps), deps, true), cdeps, { signal, wait, timeoutSec: reserved.timeout })
      return { exitCode: failed(results) ? 1 : 0, json: results }
    }
    case 'restart': {
      splash()
      const { argv, signal } = takeSignal(rest)
      const plans = plansFrom(specsFrom(argv, deps), deps, true)
      const results = await restartNodes(plans, cdeps, { signal, timeoutSec: reserved.timeout, startTimeoutSec: reserved.timeout ?? 60 })
      return { exitCode: failed(results) ? 1 : 0, json: results }
    }
    default:
      throw new MultiUsageError(`Invalid command: ${command} (one of ${MULTI_COMMANDS.join(', ')})`)
  }
}
