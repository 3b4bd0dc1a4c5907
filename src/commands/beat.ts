import { Flags } from '@oclif/core'
import { detach, dropPrivileges } from '../process/index.js'
import { checkPrivilegeFlags, privilegeFlags } from '../cli/flags/daemon-flags.js'
import { TsqCommand } from '../cli/base-command.js'
import { storeFlags, storeOptionsOf } from '../cli/flags/beat-store-flags.js'
import { choiceFlag, floatFlag } from '../cli/flags/oclif-flags.js'
import { healthFlags, healthFlagsOf } from '../cli/flags/health-flags.js'
import { DEFAULT_LOCK_TIMEOUT, runBeat, type HaMode } from '../beat/index.js'

export default class BeatCommand extends TsqCommand<void> {
  static summary = 'Send periodic tasks on schedule (Celery beat; RedBeat-compatible Redis store).'
  static description =
    'Entries come from the app (-A, createApp({ beatSchedule })) and from the store, where `tsq schedule` changes them while beat runs. Several beats can share a Redis store safely: --ha lease (one leader, fenced) or --ha mutex (all active, RabbitMQ exclusive queues).'
  static enableJsonFlag = false
  static flags = {
    ...storeFlags,
    app: Flags.string({ char: 'A', description: 'Module whose app holds beatSchedule entries.' }),
    ha: choiceFlag({
      description:
        'Several beats on one store: lease (default with redis; with django it needs a Redis), mutex (needs RabbitMQ), none (default with file and django).',
      choices: ['lease', 'mutex', 'none'],
    }),
    'lock-timeout': floatFlag({
      description: 'Lease time in seconds for --ha lease; a follower takes over within it.',
      default: DEFAULT_LOCK_TIMEOUT,
      min: 0,
      minOpen: true,
    }),
    'max-interval': floatFlag({
      description: 'Longest sleep between checks, seconds (Celery: 300; 5 with django, as its DatabaseScheduler).',
      min: 0,
      minOpen: true,
    }),
    loglevel: Flags.string({ char: 'l', description: 'DEBUG, INFO, WARNING, ERROR or CRITICAL.', default: 'WARNING' }),
    logfile: Flags.string({ char: 'f', description: 'Log file (default stderr).' }),
    pidfile: Flags.string({ description: 'Write the pid here; refuse to start if a live beat holds it.' }),
    detach: Flags.boolean({ char: 'D', description: 'Run in the background (use with --pidfile and --logfile).' }),
    ...privilegeFlags,
    ...healthFlags,
  }
  static examples = [
    '<%= config.bin %> beat -A ./tasks.js -l INFO',
    '<%= config.bin %> beat -b redis://127.0.0.1:6379/0 --scheduler redis --ha lease --lock-timeout 10',
    '<%= config.bin %> beat -b amqp://guest:guest@127.0.0.1// --scheduler redis --redis-url redis://127.0.0.1:6379/1 --ha mutex',
    '<%= config.bin %> beat -b redis://127.0.0.1:6379/0 --scheduler django --database-url postgresql://app@127.0.0.1/shop',
  ]

  async run(): Promise<void> {
    const { flags } = await this.parse(BeatCommand)
    if (flags.detach) {
      const pid = detach('beat', this.argv, flags.logfile ?? null, checkPrivilegeFlags(flags))
      if (!flags.quiet) this.log(`beat: detached as pid ${pid}`)
      return
    }
    dropPrivileges(flags.uid, flags.gid)
    const code = await runBeat({
      appSpec: flags.app,
      broker: flags.broker,
      ...storeOptionsOf(flags),
      ha: flags.ha as HaMode | undefined,
      lockTimeout: flags['lock-timeout'],
      maxInterval: flags['max-interval'],
      loglevel: flags.debug ? 'DEBUG' : flags.loglevel,
      logfile: flags.logfile ?? null,
      pidfile: flags.pidfile ?? null,
      quiet: flags.quiet,
      version: this.config.version,
      health: healthFlagsOf(flags),
    })
    process.exit(code)
  }
}
