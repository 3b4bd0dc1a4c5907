import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { auditLines, readLogLines, recordText } from '../../logtool/index.js'

export default class LogtoolErrors extends TsqCommand<string[]> {
  static summary = "Print the failed tasks' lines, each with its whole traceback."
  static strict = false
  static args = { files: Args.string({ description: 'Log files (.gz read as they are; - or none: stdin).' }) }

  async run(): Promise<string[]> {
    const { argv } = await this.parse(LogtoolErrors)
    const json = this.jsonEnabled()
    const found: string[] = []
    await auditLines(readLogLines(argv as string[]), {
      onRecord: (record, event) => {
        if (!(event?.kind === 'failed')) return
        // Printed as found, so a large log streams; kept only for --json.
        if (json) found.push(recordText(record))
        else this.log(recordText(record))
      },
    })
    return found
  }
}
