import { Flags } from '@oclif/core'
import { hostname as osHostname } from 'node:os'
import { TsqCommand } from '../cli/base-command.js'
import { choiceFlag, floatFlag, integerFlag } from '../cli/flags/oclif-flags.js'
import { InvalidValueError, UsageError, optionLabel } from '../cli/errors.js'
import { nodeFormat, pyRepr, workerNodename } from '../protocol/index.js'
import { detach, checkPidfile, dropPrivileges } from '../process/index.js'
import { checkPrivilegeFlags, privilegeFlags } from '../cli/flags/daemon-flags.js'
import { runWorker } from '../worker/run-worker.js'
import { superviseWorker } from '../worker/watch/supervisor.js'
import { DEFAULT_LOCK_TIMEOUT, startBeat } from '../beat/index.js'
import { storeFlags, storeOptionsOf } from '../cli/flags/beat-store-flags.js'
import { healthFlags, healthFlagsOf } from '../cli/flags/health-flags.js'

export default class WorkerCommand extends TsqCommand<void> {
  static summary = 'Start a worker that runs the tasks of a JavaScript/TypeScript module.'
  static description =
    'A Celery-compatible worker: Python clients, `celery inspect` and Flower see it as a Celery worker. TERM or Ctrl-C: warm shutdown (running tasks finish); QUIT or a second Ctrl-C: cold shutdown (running tasks are cancelled and their messages restored).'
  static enableJsonFlag = false
  static flags = {
    app: Flags.string({
      char: 'A',
      description:
        "The task module (exports the app as `app` or default). Without it the worker runs the default app: built-in tasks only, answering remote control, as Celery's.",
    }),
    hostname: Flags.string({ char: 'n', description: 'Node name (%h host, %n short host, %d domain). Default celery@%h.' }),
    concurrency: integerFlag({
      char: 'c',
      description: "Pool size (default: CELERY_WORKER_CONCURRENCY, the app's worker_concurrency, else the CPU count).",
      min: 1,
    }),
    pool: choiceFlag({
      char: 'P',
      description:
        "Pool implementation (processes: another name for prefork, as in Celery); default: CELERY_WORKER_POOL, the app's worker_pool, else prefork.",
      choices: ['prefork', 'threads', 'solo', 'processes'],
    }),
    queues: Flags.string({
      char: 'Q',
      description: "Comma-separated queues to consume (default: the app's defaultQueue, celery unless set).",
    }),
    'exclude-queues': Flags.string({ char: 'X', description: 'Comma-separated queues not to consume.' }),
    include: Flags.string({
      char: 'I',
      description:
        'Comma-separated modules to import after the app module, in every pool process too (paths, resolved as -A is); they register tasks on the app they import.',
    }),
    loglevel: Flags.string({ char: 'l', description: 'DEBUG, INFO, WARNING, ERROR or CRITICAL.', default: 'WARNING' }),
    logfile: Flags.string({ char: 'f', description: 'Log file (%n %h %d %p %i %I expand; %i/%I give one file per pool process).' }),
    pidfile: Flags.string({ description: 'Write the pid here; refuse to start if a live worker holds it.' }),
    'task-events': Flags.boolean({
      char: 'E',
      aliases: ['events'],
      description: 'Send task events (for monitors such as `celery events` and Flower). Also --events, as in Celery.',
    }),
    'prefetch-multiplier': integerFlag({
      description: "Messages to prefetch per pool slot (default: the app's worker_prefetch_multiplier, else 4).",
      min: 0,
    }),
    optimization: choiceFlag({
      char: 'O',
      description: 'Scheduling optimization (fair is the only one and the behaviour here).',
      choices: ['fair', 'default'],
    }),
    'without-heartbeat': Flags.boolean({ description: 'Send no worker-online/heartbeat/offline events.' }),
    'without-mingle': Flags.boolean({ description: 'Do not sync revoked ids with other workers at start-up.' }),
    'without-gossip': Flags.boolean({
      description: 'Do not follow other workers\' events (gossip: the clock, and "missed heartbeat from" when a peer stops).',
    }),
    'heartbeat-interval': floatFlag({ description: 'Seconds between worker-heartbeat events.', default: 2, min: 0 }),
    purge: Flags.boolean({ aliases: ['discard'], description: 'Purge the task queues before consuming. Also --discard, as in Celery.' }),
    'time-limit': floatFlag({ description: 'Hard time limit in seconds: the task is killed.', min: 0 }),
    'soft-time-limit': floatFlag({ description: "Soft time limit in seconds: the task's AbortSignal fires.", min: 0 }),
    'max-tasks-per-child': integerFlag({ description: 'Replace a pool process after it ran this many tasks.', min: 1 }),
    'max-memory-per-child': integerFlag({
      description: 'Replace a pool process, after its task, once its resident memory exceeds this many KiB.',
      min: 1,
    }),
    autoscale: Flags.string({ description: 'MAX,MIN: grow the pool up to MAX processes while tasks wait, shrink to MIN when idle.' }),
    statedb: Flags.string({
      char: 'S',
      description: 'Keep revoked ids and the logical clock in this file across restarts (%n etc. expand).',
    }),
    'cancel-long-running-tasks-on-connection-loss': Flags.boolean({
      description: 'On broker connection loss, cancel running late-ack tasks (their messages are redelivered).',
    }),
    'eta-broker-delay-after': floatFlag({
      min: 0,
      description:
        "Seconds: an ETA or countdown further away than this is handed to the broker's delayed delivery (RabbitMQ) instead of held unacknowledged past the broker's consumer_timeout. Default 1500 (worker_eta_broker_delay_after).",
    }),
    'without-eta-broker-delay': Flags.boolean({
      description:
        'Hold every ETA task in the worker, as Celery 5.2 does (worker_eta_broker_delay = False); a far one is logged with a warning.',
    }),
    'early-ack': Flags.boolean({ description: "Ack when a task starts (Celery's default) instead of after it finishes." }),
    'soft-shutdown-timeout': floatFlag({
      description: 'Seconds a soft shutdown lets running tasks finish before going cold (0: no soft phase).',
      default: 0,
      min: 0,
    }),
    'enable-soft-shutdown-on-idle': Flags.boolean({
      description: 'Run the soft shutdown window even when no task is running (gives ETA tasks back).',
    }),
    detach: Flags.boolean({ char: 'D', description: 'Run in the background (use with --pidfile and --logfile).' }),
    watch: Flags.boolean({
      description:
        'Development mode: restart the worker when the task module (-A), an -I module or a local file they import changes (not node_modules). The old worker stops warm (running tasks finish, prefetched messages go back to the broker), then the new one consumes; a change that fails to load leaves the old worker running. See docs/watch.md.',
    }),
    ...privilegeFlags,
    ...healthFlags,
    beat: Flags.boolean({
      char: 'B',
      description:
        "Also run beat in this process (Celery's embedded beat): the app's beatSchedule and the store's entries. With --scheduler redis, several workers with -B elect one sender (lease).",
    }),
    ...storeFlags,
    schedule: Flags.string({
      char: 's',
      aliases: ['schedule-filename'],
      description:
        "With -B and --scheduler file, the store's path (default ./tsq-beat-schedule.json). Also --schedule-filename, as in Celery.",
    }),
    // -S is --statedb here, as in Celery's worker.
    scheduler: choiceFlag({
      description: 'With -B, where entries live: file (embedded) or redis (RedBeat key layout).',
      choices: ['file', 'redis'],
      default: 'file',
    }),
  }
  static examples = [
    '<%= config.bin %> worker -A ./tasks.js -l INFO',
    '<%= config.bin %> worker -A ./tasks.ts -b amqp://guest:guest@127.0.0.1:5672// -c 4 -Q celery,images -n w1@%h',
    '<%= config.bin %> worker -A ./tasks.js -P solo -c 50 -E',
    '<%= config.bin %> worker -A ./tasks.js -B -s ./beat-schedule.json',
    '<%= config.bin %> worker -A ./tasks.ts -l INFO --watch',
  ]

  async run(): Promise<void> {
    // --workdir (a global flag) is applied by the parse.
    const { flags } = await this.parse(WorkerCommand)
    if (flags.watch && flags.detach) throw new UsageError('--watch is a development mode that runs in the foreground: drop -D/--detach.')
    if (flags.watch && !flags.app) throw new UsageError('--watch needs -A/--app: the task module whose files it watches.')
    if (flags.detach) {
      const nodename = workerNodename(flags.hostname, osHostname())
      const how = checkPrivilegeFlags(flags)
      if (flags.pidfile) checkPidfile(nodeFormat(flags.pidfile, nodename, 0))
      const pid = detach('worker', this.argv, flags.logfile ? nodeFormat(flags.logfile, nodename, 0) : null, how)
      if (!flags.quiet) this.log(`${nodename}: detached as pid ${pid}`)
      return
    }
    dropPrivileges(flags.uid, flags.gid)
    const nodename = workerNodename(flags.hostname, osHostname())
    const split = (raw: string | undefined) =>
      (raw ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    let autoscale: { max: number; min: number } | null = null
    if (flags.autoscale !== undefined) {
      const [maxText, minText] = flags.autoscale.split(',')
      const max = Number(maxText)
      const min = minText === undefined || minText.trim() === '' ? 0 : Number(minText)
      if (!Number.isInteger(max) || !Number.isInteger(min) || max < 1 || min < 0 || min > max)
        throw new InvalidValueError(optionLabel('autoscale'), `${pyRepr(flags.autoscale)} is not MAX,MIN with 0 <= MIN <= MAX.`)
      autoscale = { max, min }
    }
    // The worker runs as a child, restarted on each change; it parses this same command line again.
    if (flags.watch) process.exit(await superviseWorker({ args: this.argv }))
    const code = await runWorker({
      appSpec: flags.app ?? null,
      includes: split(flags.include),
      broker: flags.broker,
      resultBackend: flags['result-backend'],
      nodename,
      concurrency: flags.concurrency,
      pool: flags.pool === 'processes' ? 'prefork' : (flags.pool as 'prefork' | 'threads' | 'solo' | undefined),
      queues: split(flags.queues),
      excludeQueues: split(flags['exclude-queues']),
      loglevel: flags.loglevel,
      logfile: flags.logfile ? nodeFormat(flags.logfile, nodename, 0) : null,
      logfileTemplate: flags.logfile ?? null,
      pidfile: flags.pidfile ? nodeFormat(flags.pidfile, nodename, 0) : null,
      taskEvents: flags['task-events'],
      prefetchMultiplier: flags['prefetch-multiplier'],
      heartbeat: !flags['without-heartbeat'],
      heartbeatInterval: flags['heartbeat-interval'],
      mingle: !flags['without-mingle'],
      gossip: !flags['without-gossip'],
      purge: flags.purge,
      timeLimit: flags['time-limit'] ?? null,
      softTimeLimit: flags['soft-time-limit'] ?? null,
      maxTasksPerChild: flags['max-tasks-per-child'],
      softShutdownTimeout: flags['soft-shutdown-timeout'],
      softShutdownOnIdle: flags['enable-soft-shutdown-on-idle'],
      acksLate: !flags['early-ack'],
      autoscale,
      maxMemoryPerChild: flags['max-memory-per-child'],
      statedb: flags.statedb ? nodeFormat(flags.statedb, nodename, 0) : null,
      cancelLongRunningOnLoss: flags['cancel-long-running-tasks-on-connection-loss'],
      etaBrokerDelay: flags['without-eta-broker-delay'] ? false : undefined,
      etaBrokerDelayAfter: flags['eta-broker-delay-after'] ?? null,
      health: healthFlagsOf(flags),
      quiet: flags.quiet,
      version: this.config.version,
      startCompanion: flags.beat
        ? async (log, brokerUrl) => {
            // HA as `tsq beat` defaults it: a lease with the Redis store, none with a file.
            // The worker's broker as it resolved it (its environment no longer holds TSQ_BROKER_URL).
            const beat = await startBeat({
              appSpec: flags.app,
              broker: brokerUrl,
              ...storeOptionsOf(flags),
              ha: undefined,
              lockTimeout: DEFAULT_LOCK_TIMEOUT,
              maxInterval: undefined,
              log,
            })
            beat.done.catch((error: Error) => log.error(`beat: stopped: ${error.message}`))
            return beat
          }
        : undefined,
    })
    process.exit(code)
  }
}
