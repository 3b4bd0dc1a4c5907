import { Args } from '@oclif/core'
import type { MigrateResult } from '../admin/index.js'
import { TsqCommand } from '../cli/base-command.js'
import { runMigrate } from '../cli/migrate-command.js'
import { migrateFlags } from '../cli/flags/oclif-flags.js'

export default class Migrate extends TsqCommand<MigrateResult> {
  static summary = 'Move tasks from one broker to another (any of amqp://, redis://, file://).'
  static description =
    "Each message is moved whole (body, headers, properties: priority, ETA, reply-to) and, with -a, acked on the source only after the destination confirmed it, so a migrate killed at any point loses nothing. Without -a the source keeps its messages (a copy), as Celery's."
  static args = {
    source: Args.string({ description: 'Broker URL to take the tasks from.', required: true }),
    destination: Args.string({ description: 'Broker URL to put them on.', required: true }),
  }
  static flags = { ...migrateFlags }
  static examples = [
    '<%= config.bin %> migrate amqp://guest:guest@127.0.0.1// redis://127.0.0.1:6379/0 -a',
    '<%= config.bin %> migrate redis://old:6379/0 redis://new:6379/0 -a -Q celery,images:pictures -T proj.resize',
  ]

  async run(): Promise<MigrateResult> {
    const { args, flags } = await this.parse(Migrate)
    const config = await this.clientConfig(flags)
    return runMigrate({
      source: args.source,
      destination: args.destination,
      flags,
      defaultQueue: config.defaultQueue,
      lines: !this.jsonEnabled() && !flags.quiet,
    })
  }
}
