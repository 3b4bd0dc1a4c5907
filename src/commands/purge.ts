import { Flags } from '@oclif/core'
import { withTransport } from '../client/index.js'
import { TsqCommand } from '../cli/base-command.js'
import { UsageError } from '../cli/errors.js'

export interface PurgeResult {
  purged: number
  queues: Record<string, number>
}

export default class Purge extends TsqCommand<PurgeResult> {
  static summary = 'Erase all waiting messages from task queues. There is no undo.'
  static flags = {
    queues: Flags.string({
      char: 'Q',
      description: "Comma-separated queues to purge (default: the app's default queue, celery unless set).",
    }),
    'exclude-queues': Flags.string({ char: 'X', description: 'Comma-separated queues not to purge.' }),
    force: Flags.boolean({ char: 'f', description: 'Do not ask for confirmation (required when stdin is not a terminal).' }),
  }
  static examples = ['<%= config.bin %> purge', '<%= config.bin %> purge -Q celery,images -f']

  async run(): Promise<PurgeResult> {
    const { flags } = await this.parse(Purge)
    const config = await this.clientConfig(flags)
    const excluded = new Set((flags['exclude-queues'] ?? '').split(',').filter(Boolean))
    const names = (flags.queues ?? config.defaultQueue)
      .split(',')
      .map((q) => q.trim())
      .filter((q) => q && !excluded.has(q))
    if (names.length === 0) throw new UsageError('no queues to purge')
    if (!flags.force) {
      if (!process.stdin.isTTY) throw new UsageError('refusing to purge without confirmation: stdin is not a terminal, pass -f/--force')
      const { confirm } = await import('@inquirer/prompts')
      this.logToStderr(
        `WARNING: This will remove all tasks from ${names.length === 1 ? 'queue' : 'queues'}: ${names.join(', ')}.\n         There is no undo for this operation!`,
      )
      const sure = await confirm({ message: 'Are you sure you want to delete all tasks?', default: false })
      if (!sure) return { purged: 0, queues: {} }
    }
    const queues: Record<string, number> = {}
    await withTransport(
      config.brokerUrl,
      async (transport) => {
        for (const name of names) queues[name] = await transport.purge(name)
      },
      config.transportSettings,
    )
    const purged = Object.values(queues).reduce((a, b) => a + b, 0)
    if (!this.jsonEnabled() && !flags.quiet) {
      const noun = `${names.length} ${names.length === 1 ? 'queue' : 'queues'}`
      this.log(purged ? `Purged ${purged} ${purged === 1 ? 'message' : 'messages'} from ${noun}.` : `No messages purged from ${noun}.`)
    }
    return { purged, queues }
  }
}
