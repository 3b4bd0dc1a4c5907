import { Flags } from '@oclif/core'
import { loadConfig } from '../app/config.js'
import { detach } from '../app/detach.js'
import { dropPrivileges } from '../app/privileges.js'
import { checkPrivilegeFlags, privilegeFlags } from '../cli/daemon-flags.js'
import { TsqCommand } from '../cli/base-command.js'
import { clientConfig, type GlobalFlagValues } from '../cli/client-config.js'
import { choiceFlag, floatFlag } from '../cli/oclif-flags.js'
import { DEFAULT_LOCK_TIMEOUT, runBeat, type HaMode, type StoreKind } from '../beat/index.js'

/** The store flags beat and every `tsq schedule` command share. */
export const storeFlags = {
  scheduler: choiceFlag({ char: 'S', description: 'Where entries live: file (embedded) or redis (RedBeat key layout).', choices: ['file', 'redis'], default: 'file' }),
  schedule: Flags.string({ char: 's', description: 'The file store\'s path (default ./tsq-beat-schedule.json).' }),
  'redis-url': Flags.string({ description: 'Redis for --scheduler redis (default: the broker URL when it is Redis).' }),
  'key-prefix': Flags.string({ description: 'RedBeat key prefix (redbeat_key_prefix).', default: 'redbeat:' }),
  timezone: Flags.string({ description: 'Timezone crontab entries are read in (IANA name; default TSQ_TIMEZONE, then UTC).' }),
}

/** --timezone, else TSQ_TIMEZONE, else UTC (the precedence lives in loadConfig). */
export function zoneOf(flags: { timezone?: string }): string {
  return loadConfig({ timezone: flags.timezone }).timezone
}

/** The store flags as beat's options take them (`tsq beat` and `tsq worker -B`). */
export function storeOptionsOf(flags: { scheduler: string; schedule?: string; 'redis-url'?: string; 'key-prefix': string; timezone?: string }) {
  return {
    scheduler: flags.scheduler as StoreKind,
    schedulePath: flags.schedule,
    redisUrl: flags['redis-url'],
    keyPrefix: flags['key-prefix'],
    timezone: zoneOf(flags),
  }
}

export default class BeatCommand extends TsqCommand<void> {
  static summary = 'Send periodic tasks on schedule (Celery beat; RedBeat-compatible Redis store).'
  static description = 'Entries come from the app (-A, createApp({ beatSchedule })) and from the store, where `tsq schedule` changes them while beat runs. Several beats can share a Redis store safely: --ha lease (one leader, fenced) or --ha mutex (all active, RabbitMQ exclusive queues).'
  static enableJsonFlag = false
  static flags = {
    ...storeFlags,
    app: Flags.string({ char: 'A', description: 'Module whose app holds beatSchedule entries.' }),
    ha: choiceFlag({ description: 'Several beats on one store: lease (default with redis), mutex (needs RabbitMQ), none (default with file).', choices: ['lease', 'mutex', 'none'] }),
    'lock-timeout': floatFlag({ description: 'Lease time in seconds for --ha lease; a follower takes over within it.', default: DEFAULT_LOCK_TIMEOUT, min: 0, minOpen: true }),
    'max-interval': floatFlag({ description: 'Longest sleep between checks, seconds (Celery: 300).', min: 0, minOpen: true }),
    loglevel: Flags.string({ char: 'l', description: 'DEBUG, INFO, WARNING, ERROR or CRITICAL.', default: 'WARNING' }),
    logfile: Flags.string({ char: 'f', description: 'Log file (default stderr).' }),
    pidfile: Flags.string({ description: 'Write the pid here; refuse to start if a live beat holds it.' }),
    detach: Flags.boolean({ char: 'D', description: 'Run in the background (use with --pidfile and --logfile).' }),
    ...privilegeFlags,
  }
  static examples = [
    '<%= config.bin %> beat -A ./tasks.js -l INFO',
    '<%= config.bin %> beat -b redis://127.0.0.1:6379/0 --scheduler redis --ha lease --lock-timeout 10',
    '<%= config.bin %> beat -b amqp://guest:guest@127.0.0.1// --scheduler redis --redis-url redis://127.0.0.1:6379/1 --ha mutex',
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
    })
    process.exit(code)
  }
}

export async function storeFromFlags(flags: { scheduler: string; schedule?: string; 'redis-url'?: string; 'key-prefix': string; timezone?: string } & GlobalFlagValues) {
  const { openStore } = await import('../beat/index.js')
  // The broker as the other client commands take it (-b, the environment, -A's app, --config).
  const config = await clientConfig(flags)
  return openStore({
    scheduler: flags.scheduler as StoreKind,
    schedulePath: flags.schedule,
    redisUrl: flags['redis-url'],
    keyPrefix: flags['key-prefix'],
    tz: zoneOf(flags),
    brokerUrl: config.brokerUrl,
    ssl: config.beatStoreSsl,
  })
}
