import { broadcast, flattenReplies } from '../app/control.js'
import { TsqCommand } from '../cli/base-command.js'
import { NoRepliesError } from '../cli/errors.js'
import { remoteFlags, remoteOptions } from '../cli/remote-flags.js'
import { renderNodeCount } from '../cli/render/replies.js'
import { statusTable } from '../cli/render/tables.js'
import type { NodeReply } from '../transport/index.js'

export default class Status extends TsqCommand<NodeReply> {
  static summary = 'List the workers that are online (ping everyone).'
  static flags = { ...remoteFlags }
  static examples = ['<%= config.bin %> status', '<%= config.bin %> status -b redis://127.0.0.1:6379/0 --json']

  async run(): Promise<NodeReply> {
    const { flags } = await this.parse(Status)
    const config = this.config_(flags)
    const replies = await broadcast('ping', { brokerUrl: config.brokerUrl, ...remoteOptions(flags) })
    if (replies.length === 0) throw new NoRepliesError()
    const merged = flattenReplies(replies)
    const count = renderNodeCount(Object.keys(merged).length)
    if (this.jsonEnabled()) {
      // Celery prints the count after the JSON; on stderr it cannot break a parser.
      if (!flags.quiet) process.stderr.write(`${count.trim()}\n`)
    } else {
      this.log(await statusTable(merged, this.color))
      if (!flags.quiet) this.log(count)
    }
    return merged
  }
}
