import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { auditLines, formatStats, readLogLines, type LogStats } from '../../logtool/index.js'

export default class LogtoolStats extends TsqCommand<LogStats> {
  static summary = 'Count the tasks in worker logs: received, succeeded, failed, retried, and never finished.'
  static strict = false
  static args = { files: Args.string({ description: 'Log files (.gz read as they are; - or none: stdin).' }) }
  static examples = ['<%= config.bin %> logtool stats worker.log', 'zcat old.log.gz | <%= config.bin %> logtool stats -']

  async run(): Promise<LogStats> {
    const { argv } = await this.parse(LogtoolStats)
    const stats = (await auditLines(readLogLines(argv as string[]))).stats()
    if (!this.jsonEnabled()) this.log(formatStats(stats))
    return stats
  }
}
