import { TsqCommand } from '../../cli/base-command.js'
import { failedFilterFlags, filterFrom, oneLine, withBackend } from '../../cli/failed-inbox.js'
import { listFailed, type FailedTask } from '../../client/index.js'

export default class FailedLs extends TsqCommand<FailedTask[]> {
  static summary = 'List failed tasks: from the result backend, and the messages tsq workers kept of them, newest first.'
  static description =
    "The replay column says how `tsq failed retry` would send each again: `message` (the kept message itself, exact), `arguments` (a Python worker's failure with result_extended: a new task with the stored arguments), or - (it cannot)."
  static flags = failedFilterFlags
  static examples = [
    '<%= config.bin %> failed ls --result-backend redis://127.0.0.1:6379/1',
    '<%= config.bin %> failed ls --task "proj.*" --exception ValueError --since 2h --json',
  ]

  async run(): Promise<FailedTask[]> {
    const { flags } = await this.parse(FailedLs)
    const config = await this.clientConfig(flags)
    const filter = filterFrom(flags)
    const tasks = await withBackend(config, (backend) => listFailed(backend, filter, { limit: flags.limit }))
    if (this.jsonEnabled()) return tasks
    if (tasks.length === 0) {
      this.log('no failed tasks')
      return tasks
    }
    const { default: Table } = await import('cli-table3')
    const table = new Table({
      head: ['id', 'task', 'exception', 'worker', 'failed at', 'replay'].map((h) => this.color.bold(h)),
      style: { head: [], border: [] },
      chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
    })
    for (const t of tasks)
      table.push([t.taskId, t.task ?? '-', oneLine(t.exception, 50), t.worker ?? '-', t.failedAt ?? '-', t.replay ?? '-'])
    this.log(table.toString())
    return tasks
  }
}
