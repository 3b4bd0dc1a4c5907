import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { bulkFlags, chooseFailed, confirmed, failedFilterFlags, withBackend } from '../../cli/failed-inbox.js'
import { purgeFailed } from '../../client/index.js'

export interface FailedPurgeOutput {
  purged: string[]
}

export default class FailedPurge extends TsqCommand<FailedPurgeOutput> {
  static summary = 'Remove failed tasks from the inbox: their kept messages and their stored results (as AsyncResult.forget()). No undo.'
  static description = 'Asks on a terminal; a script passes --yes.'
  static strict = false
  static args = { ids: Args.string({ description: 'failed tasks’ ids (tsq failed ls)' }) }
  static flags = { ...failedFilterFlags, ...bulkFlags }
  static examples = ['<%= config.bin %> failed purge 1b1c…', '<%= config.bin %> failed purge --all --until 7d --yes']

  async run(): Promise<FailedPurgeOutput> {
    const { argv, flags } = await this.parse(FailedPurge)
    const ids = (argv as string[]).filter(Boolean)
    const config = await this.clientConfig(flags)
    const purged = await withBackend(config, async (backend) => {
      const tasks = await chooseFailed(backend, ids, flags)
      if (tasks.length === 0) return []
      const question = `Remove ${tasks.length} failed task${tasks.length === 1 ? '' : 's'} and their results? There is no undo.`
      if (!(await confirmed(question, tasks.length, flags.yes, true))) return []
      const chosen = tasks.map((t) => t.taskId)
      await purgeFailed(backend, chosen)
      return chosen
    })
    if (!this.jsonEnabled() && !flags.quiet) this.log(`Purged ${purged.length} failed task${purged.length === 1 ? '' : 's'}.`)
    return { purged }
  }
}
