import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { auditLines, readLogLines, recordText } from '../../logtool/index.js'

export default class LogtoolTraces extends TsqCommand<string[]> {
  static summary = 'Print every record that spans several lines (tracebacks), whole.'
  static strict = false
  static args = { files: Args.string({ description: 'Log files (.gz read as they are; - or none: stdin).' }) }

  async run(): Promise<string[]> {
    const { argv } = await this.parse(LogtoolTraces)
    const json = this.jsonEnabled()
    const found: string[] = []
    await auditLines(readLogLines(argv as string[]), {
      onRecord: (record) => {
        if (!(record.continuation.length > 0)) return
        // Printed as found, so a large log streams; kept only for --json.
        if (json) found.push(recordText(record))
        else this.log(recordText(record))
      },
    })
    return found
  }
}
