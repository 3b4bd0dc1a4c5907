import { Flags } from '@oclif/core'
import { healthFlags, healthFlagsOf } from '../cli/flags/health-flags.js'
import { resolve } from 'node:path'
import { TsqCommand } from '../cli/base-command.js'
import { redisUrlFor } from '../beat/index.js'
import { storeFlags, storeOpenOptions } from '../cli/flags/beat-store-flags.js'
import { lockFlags } from '../cli/lock-store.js'
import { integerFlag } from '../cli/flags/oclif-flags.js'
import { UsageError } from '../cli/errors.js'
import { resolveBasicAuth, type ResolvedBasicAuth } from '../dashboard/basic-auth.js'
import { runDashboard } from '../dashboard/run-dashboard.js'

export default class Dashboard extends TsqCommand<void> {
  static aliases = ['flower']
  static summary = "A live web console and Prometheus metrics for the cluster, with Flower's REST API (also `tsq flower`)."
  static description =
    'Serves pages of workers, tasks, queues and throughput, updated live from the events workers send (start them with -E, or keep --enable-events), ' +
    "Flower's REST API under /api, /metrics for Prometheus with Flower's metric names, and /healthcheck. Binds 127.0.0.1 unless --address says otherwise. TERM or Ctrl-C stops it."
  static enableJsonFlag = false
  static flags = {
    port: integerFlag({ description: 'Port to serve on (0: any free port).', default: 5555, min: 0, max: 65535 }),
    address: Flags.string({ description: 'Address to bind.', default: '127.0.0.1' }),
    'url-prefix': Flags.string({ description: 'Serve everything under this path (behind a reverse proxy), e.g. /flower.' }),
    'basic-auth': Flags.string({
      description:
        'Require HTTP basic auth: user:password[,user:password] (visible in `ps`: prefer --basic-auth-file or $TSQ_DASHBOARD_BASIC_AUTH / $FLOWER_BASIC_AUTH).',
    }),
    'basic-auth-file': Flags.string({
      description: 'Require HTTP basic auth, the user:password entries read from this file (comma- or newline-separated).',
    }),
    'allowed-hosts': Flags.string({
      description:
        "Host names the dashboard answers to besides its bound address and localhost (repeatable, or a comma list; also conf.dashboard_allowed_hosts). Any other Host gets 421; '*' turns the check off.",
      multiple: true,
      env: 'TSQ_DASHBOARD_ALLOWED_HOSTS',
    }),
    'max-tasks': integerFlag({ description: 'Tasks kept in memory; the oldest finished go first.', default: 100_000, min: 1 }),
    persistent: Flags.boolean({ description: 'Keep tasks and workers across restarts, in --db.' }),
    db: Flags.string({ description: 'State file for --persistent.', default: 'flower' }),
    'purge-offline-workers': integerFlag({ description: 'Forget workers offline for this many seconds.', min: 1 }),
    'enable-events': Flags.boolean({
      description:
        "Send enable_events to the workers every 5 s, so task events flow (Flower's default; --no-enable-events to leave workers as they are).",
      default: true,
      allowNo: true,
    }),
    'inspect-timeout': integerFlag({ description: 'Milliseconds an inspect waits for each next reply.', default: 1000, min: 1 }),
    // The locks and schedule pages read the stores `tsq locks` and `tsq schedule` read, given the same way.
    ...lockFlags,
    ...storeFlags,
    ...healthFlags,
  }
  static examples = [
    '<%= config.bin %> dashboard -b amqp://guest:guest@127.0.0.1:5672//',
    '<%= config.bin %> flower -b redis://127.0.0.1:6379/0 --port 5566 --basic-auth admin:s3cret',
    'FLOWER_BASIC_AUTH=admin:s3cret <%= config.bin %> dashboard -b redis://127.0.0.1:6379/0',
    '<%= config.bin %> dashboard -b redis://127.0.0.1:6379/0 --basic-auth-file ./dashboard-users',
    '<%= config.bin %> dashboard -A ./tasks.js --persistent --db ./dashboard.db --max-tasks 50000',
  ]

  async run(): Promise<void> {
    const { flags } = await this.parse(Dashboard)
    const config = await this.clientConfig(flags)
    let auth: ResolvedBasicAuth | undefined
    try {
      auth = resolveBasicAuth({ flag: flags['basic-auth'], file: flags['basic-auth-file'], env: process.env })
    } catch (error) {
      throw new UsageError((error as Error).message)
    }
    if (auth?.warning) process.stderr.write(`Warning: ${auth.warning}\n`)
    const basicAuth = auth?.users
    if (flags['url-prefix'] !== undefined && !/^\/?[A-Za-z0-9._~\-/]*$/.test(flags['url-prefix']))
      throw new UsageError(`--url-prefix: letters, digits and . _ ~ - / only, got '${flags['url-prefix']}'`)
    let appTasks: string[] | undefined
    if (flags.app) {
      const { loadApp } = await import('../app/index.js')
      const { resolveAppModule } = await import('../app/index.js')
      const app = await loadApp(resolveAppModule(flags.app))
      appTasks = [...app.tasks.keys()]
    }
    const schedule = storeOpenOptions(flags, config)
    // A Redis schedule store with nowhere to find Redis is a usage error now, not a failing page later.
    if (schedule.scheduler === 'redis') {
      try {
        redisUrlFor(schedule)
      } catch (error) {
        throw new UsageError((error as Error).message)
      }
    }
    await runDashboard({
      brokerUrl: config.brokerUrl,
      resultBackend: config.resultBackend,
      backendOptions: config.backendOptions,
      transportSettings: config.transportSettings,
      maxTasks: flags['max-tasks'],
      persistent: flags.persistent ? { path: resolve(flags.db) } : null,
      purgeOfflineWorkers: flags['purge-offline-workers'] ?? null,
      enableEvents: flags['enable-events'],
      queues: [config.defaultQueue],
      inspectTimeout: flags['inspect-timeout'] / 1000,
      port: flags.port,
      address: flags.address,
      urlPrefix: flags['url-prefix'],
      health: healthFlagsOf(flags),
      basicAuth,
      allowedHosts: [...(flags['allowed-hosts'] ?? []).flatMap((h) => h.split(',')), ...(config.dashboardAllowedHosts ?? [])]
        .map((h) => h.trim())
        .filter(Boolean),
      appTasks,
      lockUrl: flags['lock-url'] ?? null,
      schedule,
      log: (line) => process.stderr.write(`${line}\n`),
    })
  }
}
