// A task defined elsewhere (a Python worker's, another service's), declared
// once by name and signature so its sends are typed as a local task's are:
// `const add = app.remote<[number, number], number>('proj.add')`.
import type { App } from './app.js'
import type { AsyncResult } from './async-result.js'
import { TaskHandle, type ApplyOptions } from './task-handle.js'

/**
 * A handle on a task this process does not define: it sends by name, as
 * `app.sendTask` does (task_routes, the default queue, every send option),
 * with `options` as the defaults of each send. Nothing checks that the task
 * exists or takes `A`: the types say what its sender believes.
 */
export class RemoteTask<A extends unknown[] = unknown[], R = unknown> extends TaskHandle<A, R> {
  constructor(
    readonly app: App,
    readonly name: string,
    /** Defaults of each delay() and applyAsync(); `queue` also goes into its signatures, the one option a signature's send reads. */
    readonly options: ApplyOptions = {},
  ) {
    super()
  }

  protected send(args: unknown[], kwargs: Record<string, unknown>, options: ApplyOptions): Promise<AsyncResult> {
    return this.app.sendTask(this.name, args, kwargs, { ...this.options, ...options })
  }

  protected override signatureOptions(): Record<string, unknown> {
    return typeof this.options.queue === 'string' ? { queue: this.options.queue } : {}
  }
}
