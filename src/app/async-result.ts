import { parseIsoDate, TsqError, type ResultMeta } from '../protocol/index.js'
import type { App } from './app.js'
import { READY } from '../backends/index.js'

/** A failed or revoked task, as Python's `get()` raises it: the remote type and message. */
export class TaskError extends TsqError {
  /**
   * `name` is the error's as the task threw it: a JavaScript task's `Error`
   * stays `Error` (`excType` is then Python's `Exception`, what a Python
   * client raises); anything else is named as its `excType`.
   */
  constructor(
    readonly excType: string,
    readonly excMessage: unknown[],
    readonly excModule: string,
    readonly traceback: string | null,
    jsName?: string,
  ) {
    super('TASK_FAILED', excMessage.length === 1 ? String(excMessage[0]) : JSON.stringify(excMessage))
    this.name = jsName ?? excType
  }
}

/** How long get() waits (seconds), and whether a failure rejects (default) or is returned. */
export interface GetOptions {
  timeout?: number
  propagate?: boolean
}

/**
 * A sent task's result, `R` being what the task returns as far as the sender's
 * types know (`unknown` for a task sent by name with no type given).
 */
export class AsyncResult<R = unknown> {
  constructor(
    readonly id: string,
    private readonly app: App,
  ) {}

  private async meta(): Promise<ResultMeta | null> {
    return (await this.app.backend()).get(this.id)
  }

  /** PENDING until the backend knows more (Celery's `AsyncResult.state`). */
  get state(): Promise<string> {
    return this.meta().then((m) => m?.status ?? 'PENDING')
  }

  async ready(): Promise<boolean> {
    return READY.has(await this.state)
  }

  /**
   * What the backend holds now, without waiting (Celery's `AsyncResult.info`):
   * a custom state's meta (`{ current: 3, total: 10 }` under PROGRESS), the
   * result once done, the exception's fields after a failure; null while PENDING.
   */
  get info(): Promise<unknown> {
    return this.meta().then((m) => m?.result ?? null)
  }

  /** Celery's `successful()`: the task returned. */
  async successful(): Promise<boolean> {
    return (await this.state) === 'SUCCESS'
  }

  /** Celery's `failed()`: the task raised. */
  async failed(): Promise<boolean> {
    return (await this.state) === 'FAILURE'
  }

  /** The failed task's traceback as the worker stored it, or null. */
  get traceback(): Promise<string | null> {
    return this.meta().then((m) => m?.traceback ?? null)
  }

  /** When the task became ready (UTC), or null before. */
  get dateDone(): Promise<Date | null> {
    // Celery writes utcnow().isoformat(), naive; parseIsoDate reads naive as UTC, as Celery's parse_iso8601 does.
    return this.meta().then((m) => (m?.date_done ? parseIsoDate(m.date_done) : null))
  }

  /**
   * Celery's `revoke()`: every worker drops the task if it has not started;
   * with `terminate: true` a prefork worker also kills it while it runs.
   */
  async revoke(options: { terminate?: boolean; signal?: string } = {}): Promise<void> {
    await this.app.control.revoke(this.id, options)
  }

  /** Celery's `forget()`: the backend drops the stored result; the task then reads as PENDING. */
  async forget(): Promise<void> {
    await (await this.app.backend()).forget(this.id)
  }

  /**
   * Waits for the result; a failure rejects with a TaskError named as the
   * remote exception, or, with `propagate: false`, is returned as that
   * TaskError (Celery's `get(propagate=False)`), so that form is `unknown`
   * until narrowed (`instanceof TaskError`).
   */
  get(options?: GetOptions & { propagate?: true }): Promise<R>
  get(options: GetOptions): Promise<unknown>
  async get(options: GetOptions = {}): Promise<unknown> {
    const backend = await this.app.backend()
    const meta = await backend.waitReady(this.id, options.timeout === undefined ? undefined : options.timeout * 1000)
    // The sender's type for the worker's value: a task's declared return type.
    if (meta.status === 'SUCCESS') return meta.result as R
    const exc = (meta.result ?? {}) as { exc_type?: string; exc_message?: unknown; exc_module?: string; exc_js_name?: unknown }
    const args = Array.isArray(exc.exc_message) ? exc.exc_message : [exc.exc_message]
    const jsName = typeof exc.exc_js_name === 'string' && exc.exc_js_name ? exc.exc_js_name : undefined
    const error = new TaskError(exc.exc_type ?? meta.status, args, exc.exc_module ?? 'builtins', meta.traceback ?? null, jsName)
    if (options.propagate === false) return error
    throw error
  }
}

/**
 * Celery's `GroupResult`: the results of a group's tasks, in the order they
 * were given; `T` is the list of what they return (`[number, string]` for a
 * group of two typed signatures).
 */
export class GroupResult<T extends unknown[] = unknown[]> {
  constructor(
    readonly id: string,
    readonly results: readonly AsyncResult<T[number]>[],
  ) {}

  /**
   * Every result, in order; rejects with the first failure's TaskError, as
   * Celery's `join()` raises, or with `propagate: false` lists it in its place.
   */
  get(options?: GetOptions & { propagate?: true }): Promise<T>
  get(options: GetOptions): Promise<unknown[]>
  async get(options: GetOptions = {}): Promise<unknown[]> {
    const deadline = options.timeout === undefined ? undefined : Date.now() + options.timeout * 1000
    const values: unknown[] = []
    for (const r of this.results) {
      values.push(
        await r.get({
          timeout: deadline === undefined ? undefined : Math.max(0, deadline - Date.now()) / 1000,
          propagate: options.propagate,
        }),
      )
    }
    return values
  }

  async ready(): Promise<boolean> {
    for (const r of this.results) if (!(await r.ready())) return false
    return true
  }
}
