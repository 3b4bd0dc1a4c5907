import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { NotFailedError, withBackend } from '../../cli/failed-inbox.js'
import { showFailed, type FailedTask } from '../../client/index.js'

export interface FailedShowOutput {
  task: FailedTask
  /** The kept message: routing, properties and headers, the body base64 (null: none kept). */
  message: {
    exchange: string
    routingKey: string
    queue: string
    contentType: string
    contentEncoding: string
    priority: number
    headers: unknown
    body: string
  } | null
}

export default class FailedShow extends TsqCommand<FailedShowOutput> {
  static summary = 'Show one failed task: its exception and traceback, and the message a tsq worker kept of it.'
  static args = { id: Args.string({ required: true, description: 'task id' }) }
  static examples = ['<%= config.bin %> failed show 1b1c…', '<%= config.bin %> failed show 1b1c… --json']

  async run(): Promise<FailedShowOutput> {
    const { args, flags } = await this.parse(FailedShow)
    const config = await this.clientConfig(flags)
    const found = await withBackend(config, (backend) => showFailed(backend, args.id))
    if (!found) throw new NotFailedError(`${args.id} is not in the failed-task inbox (no FAILURE result, no kept message)`)
    const k = found.kept
    const out: FailedShowOutput = {
      task: found.task,
      message: k && {
        exchange: k.exchange,
        routingKey: k.routingKey,
        queue: k.queue,
        contentType: k.properties.contentType,
        contentEncoding: k.properties.contentEncoding,
        priority: k.properties.priority,
        headers: k.properties.headers,
        body: k.body.toString('base64'),
      },
    }
    if (this.jsonEnabled()) return out
    const t = found.task
    const lines = [
      `id:         ${t.taskId}`,
      `task:       ${t.task ?? '-'}`,
      `exception:  ${t.exception ?? '-'}`,
      `worker:     ${t.worker ?? '-'}`,
      `failed at:  ${t.failedAt ?? '-'}`,
      `queue:      ${t.queue ?? '-'}`,
      `replay:     ${t.replay === 'message' ? 'the kept message, as it was sent' : t.replay === 'arguments' ? "a new task with result_extended's arguments" : '- (cannot be sent again exactly)'}`,
    ]
    if (k)
      lines.push(
        `message:    ${k.body.length} bytes of ${k.properties.contentType} (${k.properties.contentEncoding}), exchange ${JSON.stringify(k.exchange)}, routing key ${JSON.stringify(k.routingKey)}, priority ${k.properties.priority}`,
        `argsrepr:   ${typeof k.properties.headers.argsrepr === 'string' ? k.properties.headers.argsrepr : '-'}`,
        `kwargsrepr: ${typeof k.properties.headers.kwargsrepr === 'string' ? k.properties.headers.kwargsrepr : '-'}`,
      )
    if (t.traceback) lines.push('', t.traceback.trimEnd())
    this.log(lines.join('\n'))
    return out
  }
}
