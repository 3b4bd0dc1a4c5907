// A node's full command (Celery's Node._prepare_argv, spec §9) with tsq's
// worker in place of `python -m celery worker`, and where its files live.
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import type { NodeSpec } from './node-list.js'
import { expander } from './node-list.js'
import { formatOption, type OptionMap } from './option-parser.js'

/** Options Celery moves right after the program name; for tsq they come first after `worker --detach`. */
const GLOBAL_OPTIONS = new Set(['-A', '--app', '-b', '--broker', '--result-backend', '--workdir', '--no-color', '-q', '--quiet'])

export interface PlanContext {
  /** The node binary (`process.execPath`). */
  executable: string
  /** tsq's entry script (`bin/run.js`), absolute. */
  script: string
  /** Where the worker is started from; relative paths resolve against it. */
  cwd: string
  /** Default directories for pidfiles and log files. */
  runDir: string
  logDir: string
}

export interface NodePlan {
  name: string
  /** The node binary that runs it: --executable (also passed on, as Celery passes it), else multi's own. */
  executable: string
  /** The argv after the executable (what `get` prints). */
  argv: string[]
  /** Absolute pidfile path, as multi and the worker both see it. */
  pidfile: string
  /** The log file template as passed to the worker (`%i`/`%I` left in). */
  logfile: string
  /** The options the node was asked for (no defaults, no `-n`): what is remembered. */
  options: OptionMap
  passthrough: string[]
  append: string
  cwd: string
}

/** `$TSQ_HOME` (default ~/.tsq): an unprivileged user can write there, unlike /var/run. */
export function tsqHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.TSQ_HOME ? resolve(env.TSQ_HOME) : join(homedir(), '.tsq')
}

export function defaultDirs(env: NodeJS.ProcessEnv = process.env): { runDir: string; logDir: string } {
  const home = tsqHome(env)
  return { runDir: join(home, 'run'), logDir: join(home, 'log') }
}

function firstOf(options: OptionMap, names: string[]): string | null | undefined {
  for (const n of names) if (options.has(n)) return options.get(n)
  return undefined
}

export function planNode(spec: NodeSpec, ctx: PlanContext): NodePlan {
  const expand = expander(spec.name)
  const all: OptionMap = new Map(spec.options)
  all.set('-n', spec.name)
  const givenPid = firstOf(spec.options, ['--pidfile'])
  const givenLog = firstOf(spec.options, ['--logfile', '-f'])
  if (!givenPid) all.set('--pidfile', join(ctx.runDir, '%n.pid'))
  if (!givenLog) all.set('--logfile', join(ctx.logDir, '%n%I.log'))
  // --cmd (Celery's, default `-m celery worker --detach` after python) replaces
  // `<tsq's bin/run.js> worker --detach` after node: another tsq install, say,
  // or with --executable a Python Celery's `-m celery worker --detach`.
  const cmd = all.get('--cmd')
  all.delete('--cmd')
  const head: string[] = cmd ? expand(cmd).split(' ').filter(Boolean) : [ctx.script, 'worker', '--detach']
  // A command that runs Celery's program takes the global options right after
  // `celery`, each put in front of the last, as Celery's Node._prepare_argv
  // does (Celery 5 refuses -A after `worker`); tsq's take them after the command.
  const celeryAt = cmd ? head.indexOf('celery') : -1
  const rest: string[] = []
  for (const [name, value] of all) {
    const words = formatOption(name, value === null ? null : expand(value))
    if (!GLOBAL_OPTIONS.has(name)) rest.push(...words)
    else if (celeryAt >= 0) head.splice(celeryAt + 1, 0, ...words)
    else head.push(...words)
  }
  const append = spec.append ? spec.append.split(' ').filter(Boolean).map(expand) : []
  const argv = [...head, ...rest, ...spec.passthrough, ...append]
  const workdir = firstOf(all, ['--workdir'])
  const base = workdir ? resolve(ctx.cwd, expand(workdir)) : ctx.cwd
  const executable = all.get('--executable')
  return {
    name: spec.name,
    executable: executable ? resolve(ctx.cwd, expand(executable)) : ctx.executable,
    argv,
    pidfile: resolve(base, expand(all.get('--pidfile') ?? '')),
    logfile: resolve(base, expand((givenLog || all.get('--logfile')) ?? '')),
    options: spec.options,
    passthrough: spec.passthrough,
    append: spec.append,
    cwd: ctx.cwd,
  }
}
