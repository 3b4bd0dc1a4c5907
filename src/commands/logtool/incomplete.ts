import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { auditLines, readLogLines } from '../../logtool/index.js'

export default class LogtoolIncomplete extends TsqCommand<Array<{ id: string; name: string }>> {
  static summary = 'List the tasks received and never finished (still running, or lost, when the log ends).'
  static strict = false
  static args = { files: Args.string({ description: 'Log files (.gz read as they are; - or none: stdin).' }) }

  async run(): Promise<Array<{ id: string; name: string }>> {
    const { argv } = await this.parse(LogtoolIncomplete)
    const incomplete = (await auditLines(readLogLines(argv as string[]))).incomplete()
    if (!this.jsonEnabled()) for (const task of incomplete) this.log(`Did not complete: ${task.id}`)
    return incomplete
  }
}
