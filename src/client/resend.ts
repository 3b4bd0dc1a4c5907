// The call a task was made with, read back exactly, for sending it again when
// no tsq worker kept its message (failed-tasks.ts: a Python worker's failure).
// The only exact source then is what the result backend stores with
// result_extended: the args and kwargs of the message, read without rounding;
// exact for what JSON carries (str, int, float, bool, None, lists, dicts with
// str keys), so bytes are refused, and a tuple was a list already. Events carry only their repr
// (Celery's argsrepr, possibly truncated), which no reader can turn back into
// the values ('a\x00b', '\u200b', ints beyond 2^53), so where the backend
// holds no arguments the re-send is refused, never guessed.
import type { ResultBackend } from '../backends/index.js'
import { codedError } from '../protocol/index.js'

export class ResendRefusedError extends codedError('RESEND_REFUSED') {}

export interface OriginalCall {
  task: string
  args: unknown[]
  kwargs: Record<string, unknown>
  /** The queue it was delivered from (result_extended's queue), if known. */
  queue: string | null
}

/** A number a reader may have rounded: an integer past 2^53 that is not a BigInt. */
function hasRoundedInteger(value: unknown): boolean {
  const pending: unknown[] = [value]
  let seen = 0
  while (pending.length && seen++ < 1_000_000) {
    const v = pending.pop()
    if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) return true
    if (v && typeof v === 'object' && !(v instanceof Uint8Array)) pending.push(...(Array.isArray(v) ? v : Object.values(v)))
  }
  return false
}

/** Bytes: a JSON send cannot carry them (the message that brought them was msgpack, yaml or pickle). */
function hasBytes(value: unknown): boolean {
  const pending: unknown[] = [value]
  let seen = 0
  while (pending.length && seen++ < 1_000_000) {
    const v = pending.pop()
    if (v instanceof Uint8Array) return true
    if (v && typeof v === 'object') pending.push(...(Array.isArray(v) ? v : Object.values(v)))
  }
  return false
}

/** The original call of `taskId`, or ResendRefusedError saying why it cannot be known exactly. */
export async function originalCall(taskId: string, backend: ResultBackend | null): Promise<OriginalCall> {
  const refuse = (why: string): never => {
    throw new ResendRefusedError(`cannot send '${taskId}' again with its exact arguments: ${why}; send it again from its client`)
  }
  if (!backend) return refuse('there is no result backend to read them from (events carry only their repr)')
  // django-celery-results stores task_args as the repr text, as does tsq's django-db store.
  if (backend.displayUrl.startsWith('django-db'))
    return refuse('django-db keeps only the repr of its arguments (a tsq worker keeps the message itself)')
  const meta = await backend.get(taskId)
  if (!meta) return refuse('the result backend holds nothing for it (yet)')
  const { name, args, kwargs, queue } = meta as { name?: unknown; args?: unknown; kwargs?: unknown; queue?: unknown }
  if (args === undefined && kwargs === undefined)
    return refuse('its result was stored without them (set result_extended = True on the workers)')
  if (typeof name !== 'string' || !name) return refuse('its stored result does not name the task')
  if (!Array.isArray(args)) return refuse('the stored args are not a list')
  if (kwargs !== null && kwargs !== undefined && (typeof kwargs !== 'object' || Array.isArray(kwargs)))
    return refuse('the stored kwargs are not a mapping')
  if (hasRoundedInteger(args) || hasRoundedInteger(kwargs))
    return refuse("they hold an integer beyond 2^53 that the result serializer's reader did not keep exact")
  if (hasBytes(args) || hasBytes(kwargs)) return refuse('they hold bytes, which a JSON message cannot carry')
  return { task: name, args, kwargs: (kwargs ?? {}) as Record<string, unknown>, queue: typeof queue === 'string' && queue ? queue : null }
}
