import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { auditLines, readLogLines, recordText } from '../../logtool/index.js'

export default class LogtoolDebug extends TsqCommand<string[]> {
  static summary = 'Print the records that are not about a task (start-up, connection, warnings).'
  static strict = false
  static args = { files: Args.string({ description: 'Log files (.gz read as they are; - or none: stdin).' }) }

  async run(): Promise<string[]> {
    const { argv } = await this.parse(LogtoolDebug)
    const json = this.jsonEnabled()
    const found: string[] = []
    await auditLines(readLogLines(argv as string[]), {
      onRecord: (record, event) => {
        if (!(event === null)) return
        // Printed as found, so a large log streams; kept only for --json.
        if (json) found.push(recordText(record))
        else this.log(recordText(record))
      },
    })
    return found
  }
}
