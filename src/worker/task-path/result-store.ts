// How the task path writes a task's state to the result backend, as Celery's
// store_result and mark_as_done/failure/revoked write it: key-value meta (with
// result_extended's fields) or the rpc backend's short form, encoded here so
// that a value the serializer cannot carry is the task's own EncodeError.
import {
  dumps,
  resultMetaValue,
  rpcResultValue,
  serialize,
  type ExtendedResultFields,
  type StateName,
  type TaskRequest,
  type TaskState,
} from '../../protocol/index.js'
import { escapeControl, taskLabel } from '../../protocol/index.js'
import { returnChordPart } from './chord-parts.js'
import type { Request } from './request.js'
import type { RunnerOptions } from './runner-options.js'

export class ResultStore {
  /** Celery's result_extended: key-value results also carry the task's name, args, kwargs, worker, retries and queue. */
  private readonly resultExtended: boolean

  constructor(private readonly o: RunnerOptions) {
    this.resultExtended = o.app.options.conf?.result_extended === true
  }

  /**
   * A task's last state, as Celery's mark_as_done/failure/revoked record it:
   * the result (unless ignored), then, for a chord header task, its part of
   * the chord, which an ignored result still counts.
   */
  async storeEnd(request: Request, status: TaskState, result: unknown, traceback: string | null, keepResult: boolean): Promise<void> {
    if (keepResult) await this.store(request, status, result, traceback)
    if (!isChordPart(request.message)) return
    try {
      await returnChordPart(this.o, request, status, result)
    } catch (error) {
      const m = request.message
      this.o.log.error(
        `Chord ${escapeControl(String(m.group))}: the part of ${taskLabel(m.task, m.id)} was not recorded: ${(error as Error).message}`,
      )
    }
  }

  async store(request: Request, status: StateName, result: unknown, traceback: string | null): Promise<void> {
    const backend = this.o.backend
    if (!backend) return
    const m = request.message
    const value = backend.shortForm
      ? rpcResultValue({ taskId: m.id, status, result, traceback })
      : resultMetaValue({
          taskId: m.id,
          status,
          result,
          traceback,
          groupId: m.group,
          parentId: m.parentId,
          extended: this.resultExtended ? extendedFields(request, this.o.hostname) : undefined,
        })
    // Encoded here, so a value the serializer cannot carry is the task's EncodeError, as in Celery's trace.
    const json = backend.codec && backend.codec.serializer !== 'json' ? serialize(backend.codec.serializer, value).body : dumps(value)
    try {
      await backend.store(m.id, json, status, {
        replyTo: request.delivery.properties.replyTo,
        correlationId: request.delivery.properties.correlationId ?? m.id,
      })
    } catch (error) {
      this.o.log.error(`Could not store the ${status} result of ${taskLabel(m.task, m.id)}: ${(error as Error).message}`)
      // Raised outside the task's body, as Celery's trace sends it when mark_as_done/failure raise.
      const signals = this.o.app.signals
      if (signals.has('task_internal_error'))
        signals.send('task_internal_error', {
          sender: m.task,
          taskId: m.id,
          args: m.args,
          kwargs: m.kwargs,
          request: request.info(),
          exception: error,
          traceback: (error as Error).stack ?? null,
        })
    }
  }
}

/** A chord's header task: its end counts towards running the chord's body. */
export function isChordPart(m: TaskRequest): boolean {
  return m.embed.chord !== null && m.group !== null
}

/** What result_extended adds, as Celery's _get_result_meta takes it from the request (queue: the delivery's routing key). */
function extendedFields(request: Request, hostname: string): ExtendedResultFields {
  const m = request.message
  return { name: m.task, args: m.args, kwargs: m.kwargs, worker: hostname, retries: m.retries, queue: request.delivery.routingKey ?? null }
}
