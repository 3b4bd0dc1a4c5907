import { Args, Flags } from '@oclif/core'
import { createResultBackend, READY } from '../app/backends/index.js'
import { TsqCommand } from '../cli/base-command.js'
import { CliError } from '../cli/errors.js'
import { floatFlag } from '../cli/oclif-flags.js'
import { exceptionText, isExceptionInfo, pyRepr, type ResultMeta } from '../protocol/index.js'

class TaskFailedError extends CliError {
  constructor(message: string) {
    super('TASK_FAILED', message)
  }
}

export default class Result extends TsqCommand<ResultMeta> {
  static summary = 'Print the stored result of a task (waits until it is ready).'
  static args = { id: Args.string({ required: true, description: 'task id' }) }
  static flags = {
    timeout: floatFlag({ char: 't', description: 'Give up after this many seconds (default: wait as long as it takes, like Celery).', min: 0 }),
    traceback: Flags.boolean({ description: 'Print the traceback of a failed task instead of its result.' }),
  }
  static examples = ['<%= config.bin %> result 1b1c... --result-backend redis://127.0.0.1:6379/1', '<%= config.bin %> result 1b1c... -t 10 --json']

  async run(): Promise<ResultMeta> {
    const { args, flags } = await this.parse(Result)
    const config = await this.clientConfig(flags)
    const timeoutMs = flags.timeout === undefined ? undefined : flags.timeout * 1000
    const backend = await createResultBackend(config.resultBackend, config.backendOptions)
    let meta: ResultMeta
    try {
      const stored = await backend.get(args.id)
      meta = stored && READY.has(stored.status) ? stored : await backend.waitReady(args.id, timeoutMs)
    } finally {
      await backend.close()
    }
    const failed = meta.status !== 'SUCCESS'
    if (failed) process.exitCode = 1
    if (this.jsonEnabled()) return meta
    if (flags.traceback) {
      this.log(meta.traceback ?? '')
      return meta
    }
    if (failed) throw new TaskFailedError(isExceptionInfo(meta.result) ? exceptionText(meta.result) : meta.status)
    this.log(typeof meta.result === 'string' ? meta.result : pyRepr(meta.result))
    return meta
  }
}
