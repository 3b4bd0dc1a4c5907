import { Args } from '@oclif/core'
import { TsqCommand } from '../../cli/base-command.js'
import { bulkFlags, chooseFailed, confirmed, failedFilterFlags, withBackend } from '../../cli/failed-inbox.js'
import { replayFailed, ResendRefusedError, withTransport, type Replayed } from '../../client/index.js'

export interface FailedRetryOutput {
  retried: Replayed[]
  refused: { taskId: string; reason: string }[]
}

export default class FailedRetry extends TsqCommand<FailedRetryOutput> {
  static summary = 'Send failed tasks again: the message a tsq worker kept, exactly as it was sent (same id).'
  static description =
    'A task whose message was kept is published again byte for byte (body, headers, properties, exchange and routing key), under its own id: ' +
    "its stored FAILURE gives way to the new run's outcome. A Python worker's failure has no kept message: it is sent as a new task (a new id) " +
    'with the arguments result_extended stored, when they are exact; otherwise it is refused with the reason. ' +
    'More than one task asks first on a terminal; a script passes --yes. Exit 1 when any was refused.'
  static strict = false
  static args = { ids: Args.string({ description: 'failed tasks’ ids (tsq failed ls)' }) }
  static flags = { ...failedFilterFlags, ...bulkFlags }
  static examples = [
    '<%= config.bin %> failed retry 1b1c…',
    '<%= config.bin %> failed retry --all --task proj.charge --exception Timeout --since 1h --yes',
  ]

  async run(): Promise<FailedRetryOutput> {
    const { argv, flags } = await this.parse(FailedRetry)
    const ids = (argv as string[]).filter(Boolean)
    const config = await this.clientConfig(flags)
    const out: FailedRetryOutput = { retried: [], refused: [] }
    await withBackend(config, async (backend) => {
      const tasks = await chooseFailed(backend, ids, flags)
      if (tasks.length === 0) {
        if (!this.jsonEnabled() && !flags.quiet) this.log('no failed tasks to retry')
        return
      }
      if (!(await confirmed(`Send ${tasks.length} failed task${tasks.length === 1 ? '' : 's'} again?`, tasks.length, flags.yes, false)))
        return
      await withTransport(
        config.brokerUrl,
        async (transport) => {
          for (const t of tasks) {
            try {
              const r = await replayFailed(transport, backend, t.taskId)
              out.retried.push(r)
              if (!this.jsonEnabled() && !flags.quiet)
                this.log(
                  r.how === 'message'
                    ? `${t.taskId}: its kept message sent again (exchange ${JSON.stringify(r.exchange)}, routing key ${JSON.stringify(r.routingKey)})`
                    : `${t.taskId}: sent again as ${r.taskId} with its stored arguments`,
                )
            } catch (error) {
              if (!(error instanceof ResendRefusedError) || (tasks.length === 1 && ids.length === 1)) throw error
              out.refused.push({ taskId: t.taskId, reason: error.message })
              if (!this.jsonEnabled()) this.logToStderr(`refused: ${error.message}`)
            }
          }
        },
        config.transportSettings,
      )
    })
    if (out.refused.length) process.exitCode = 1
    if (!this.jsonEnabled() && !flags.quiet && (out.retried.length > 1 || out.refused.length))
      this.log(`${out.retried.length} sent again, ${out.refused.length} refused.`)
    return out
  }
}
