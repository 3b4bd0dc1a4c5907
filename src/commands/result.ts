import { Args, Flags } from '@oclif/core'
import { createResultBackend, READY, ResultTimeoutError, type ResultBackend } from '../backends/index.js'
import { TsqCommand } from '../cli/base-command.js'
import { CliError } from '../cli/errors.js'
import { floatFlag } from '../cli/flags/oclif-flags.js'
import { exceptionText, isExceptionInfo, jsErrorName, pyRepr, type ResultMeta } from '../protocol/index.js'

class TaskFailedError extends CliError {
  constructor(message: string) {
    super('TASK_FAILED', message)
  }
}

export default class Result extends TsqCommand<ResultMeta> {
  static summary = 'Print the stored result of a task (waits until it is ready).'
  static args = { id: Args.string({ required: true, description: 'task id' }) }
  static flags = {
    timeout: floatFlag({
      char: 't',
      description: 'Give up after this many seconds (default: wait as long as it takes, like Celery).',
      min: 0,
    }),
    traceback: Flags.boolean({ description: 'Print the traceback of a failed task instead of its result.' }),
  }
  static examples = [
    '<%= config.bin %> result 1b1c... --result-backend redis://127.0.0.1:6379/1',
    '<%= config.bin %> result 1b1c... -t 10 --json',
  ]

  async run(): Promise<ResultMeta> {
    const { args, flags } = await this.parse(Result)
    const config = await this.clientConfig(flags)
    const timeoutMs = flags.timeout === undefined ? undefined : flags.timeout * 1000
    const backend = await createResultBackend(config.resultBackend, config.backendOptions)
    let meta: ResultMeta
    try {
      const stored = await backend.get(args.id)
      meta = stored && READY.has(stored.status) ? stored : await this.waitFor(backend, args.id, timeoutMs)
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
    // The error as the task threw it: a JavaScript task's `Error` is stored as Python's Exception, with its own name beside it.
    if (failed)
      throw new TaskFailedError(
        isExceptionInfo(meta.result) ? exceptionText({ ...meta.result, exc_type: jsErrorName(meta.result) }) : meta.status,
      )
    this.log(typeof meta.result === 'string' ? meta.result : pyRepr(meta.result))
    return meta
  }

  /**
   * Waits as long as it takes, as Celery's `celery result` does, but says so on
   * stderr once the wait is long: a result that was never stored (lost worker,
   * full disk, wrong backend) otherwise looks like a hang. A store that cannot
   * be read fails at once.
   */
  private async waitFor(backend: ResultBackend, id: string, timeoutMs: number | undefined): Promise<ResultMeta> {
    if (timeoutMs !== undefined && timeoutMs <= NOTICE_AFTER_MS) return backend.waitReady(id, timeoutMs)
    try {
      return await backend.waitReady(id, NOTICE_AFTER_MS)
    } catch (error) {
      if (!(error instanceof ResultTimeoutError)) throw error
    }
    const state = (await backend.get(id))?.status ?? 'PENDING'
    this.logToStderr(
      `Still waiting for ${id} (${state} in ${backend.displayUrl}): no result stored yet. ${timeoutMs === undefined ? 'Waiting until there is one; -t SECONDS gives up sooner.' : `Giving up ${(timeoutMs - NOTICE_AFTER_MS) / 1000} s from now.`}`,
    )
    return backend.waitReady(id, timeoutMs === undefined ? undefined : timeoutMs - NOTICE_AFTER_MS)
  }
}

/** How long `tsq result` waits in silence before it says what it is waiting for. */
const NOTICE_AFTER_MS = 10_000
