import { hostname as osHostname } from 'node:os'
import { fileURLToPath } from 'node:url'
import { broadcast } from '../client/index.js'
import { loadConfig } from '../config/index.js'
import { TsqCommand } from '../cli/base-command.js'
import { makeChalk } from '../cli/color.js'
import { defaultDirs, expander, runMulti, termOutput, type NodePlan } from '../multi/index.js'
import { loadApp, resolveAppModule } from '../app/index.js'
import WorkerCommand from './worker.js'

/** Worker flags that take no value, so `--opt value` can be read as Celery's `--opt=value`. */
function booleanFlags(): Set<string> {
  const out = new Set<string>()
  const all = { ...TsqCommand.baseFlags, ...WorkerCommand.flags } as Record<
    string,
    { type: string; char?: string; allowNo?: boolean; aliases?: string[] }
  >
  for (const [name, flag] of Object.entries(all)) {
    if (flag.type !== 'boolean') continue
    out.add(`--${name}`)
    for (const alias of flag.aliases ?? []) out.add(`--${alias}`)
    if (flag.allowNo) out.add(`--no-${name}`)
    if (flag.char) out.add(`-${flag.char}`)
  }
  return out
}

export default class MultiCommand extends TsqCommand<unknown> {
  static summary = 'Start, stop and manage several workers at once, as `celery multi`.'
  static description = `tsq multi <start|stop|stopwait|restart|kill|show|get|names|expand> [nodes...] [options] [-- passthrough]

Nodes are a count (3 → celery1@host..celery3@host) or names (w1 w2, w1@%h). Every option that is not multi's own goes to each worker; -c:1-3 10, -c:w1 4, --queues:w1=a,b set one node's. Pidfiles default to $TSQ_HOME/run/%n.pid and logs to $TSQ_HOME/log/%n%I.log ($TSQ_HOME is ~/.tsq unless set). The options each node was started with are remembered beside its pidfile: restart, stop, stopwait and kill need only the node list.`
  static strict = false
  static enableJsonFlag = false
  static examples = [
    '<%= config.bin %> multi start 3 -A ./tasks.js -c 2 -c:1 4',
    '<%= config.bin %> multi restart 3',
    '<%= config.bin %> multi stopwait 3 --timeout 30',
    '<%= config.bin %> multi show w1 w2 -A ./tasks.js -Q:w1 images --json',
  ]

  private json = false

  override jsonEnabled(): boolean {
    return this.json
  }

  async run(): Promise<unknown> {
    this.parsed = true
    const argv = [...this.argv]
    const dashdash = argv.indexOf('--')
    const head = dashdash < 0 ? argv : argv.slice(0, dashdash)
    this.json = head.includes('--json') || head.includes('-j')
    const booleans = booleanFlags()
    const hostname = osHostname()
    const { runDir, logDir } = defaultDirs()
    const brokers = new Map<string, Promise<string>>()
    const result = await runMulti(argv, {
      executable: process.execPath,
      script: fileURLToPath(new URL('../../bin/run.js', import.meta.url)),
      cwd: process.cwd(),
      hostname,
      runDir,
      logDir,
      version: this.config.version,
      isBoolean: (option) => booleans.has(option),
      out: (reserved) => {
        const chalk = makeChalk(reserved.noColor)
        return termOutput({ quiet: reserved.quiet, verbose: reserved.verbose, json: reserved.json, color: chalk })
      },
      ping: async (brokerUrl, nodes, timeoutSec) => {
        const replies = await broadcast('ping', { brokerUrl, destination: nodes, timeout: timeoutSec, limit: nodes.length })
        return replies.flatMap((r) => Object.keys(r))
      },
      brokerFor: (plan) => {
        const key = brokerKey(plan)
        let url = brokers.get(key)
        if (!url) brokers.set(key, (url = brokerFor(plan)))
        return url
      },
    })
    process.exitCode = result.exitCode
    return this.json ? result.json : undefined
  }
}

function option(plan: NodePlan, ...names: string[]): string | undefined {
  for (const n of names) {
    const v = plan.options.get(n)
    if (v) return expander(plan.name)(v)
  }
  return undefined
}

function brokerKey(plan: NodePlan): string {
  return `${option(plan, '-b', '--broker') ?? ''}\0${option(plan, '-A', '--app') ?? ''}\0${plan.cwd}`
}

/** The broker a node's worker will use: -b, else the environment, else its app module's own setting. */
async function brokerFor(plan: NodePlan): Promise<string> {
  const flag = option(plan, '-b', '--broker')
  const fromEnv = loadConfig({ broker: flag })
  if (fromEnv.brokerSource !== 'default') return fromEnv.brokerUrl
  const appSpec = option(plan, '-A', '--app')
  if (!appSpec) return fromEnv.brokerUrl
  try {
    const app = await loadApp(resolveAppModule(appSpec, plan.cwd))
    return app.config.brokerUrl
  } catch {
    return fromEnv.brokerUrl
  }
}
