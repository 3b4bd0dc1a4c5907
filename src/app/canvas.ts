// Signatures (Celery's canvas): a task call written down to be sent later, as
// a chain step, a group or chord member, or a callback; and freezing, which
// fixes a chain's task ids before it is sent so its result can be handed back.
import { randomUUID } from 'node:crypto'
import { uuid4 } from '../protocol/index.js'

export interface Signature {
  task: string
  args: unknown[]
  kwargs: Record<string, unknown>
  options: Record<string, unknown>
  subtask_type: null
  immutable: boolean
}

export function signature(task: string, args: unknown[] = [], kwargs: Record<string, unknown> = {}, options: { immutable?: boolean } & Record<string, unknown> = {}): Signature {
  const { immutable = false, ...rest } = options
  return { task, args, kwargs, options: rest, subtask_type: null, immutable }
}

/** Where a frozen step's result will be: one task's id, or a group's id and its members' ids. */
export type FrozenResult = { kind: 'task'; id: string } | { kind: 'group'; id: string; members: string[] }

/**
 * A chain step with its task ids fixed now (Celery's freeze), and where its
 * result will be stored: a task's own id, a chord's body's, a chain's last
 * step's, or for a group its id and each member's (nested groups' members
 * joining it, as the worker applies them).
 */
export function frozenStep(sig: Signature): { signature: Signature; result: FrozenResult | undefined } {
  const options = sig.options ?? {}
  const kwargs = (sig.kwargs ?? {}) as Record<string, unknown>
  const kind = (sig as { subtask_type?: unknown }).subtask_type ?? (sig.task.startsWith('celery.') ? sig.task.slice('celery.'.length) : 'plain')
  if (kind === 'group') {
    const groupId = typeof options.task_id === 'string' ? options.task_id : randomUUID()
    const members: string[] = []
    const tasks = (Array.isArray(kwargs.tasks) ? (kwargs.tasks as Signature[]) : []).map((member) => {
      const frozen = frozenStep(member)
      if (frozen.result?.kind === 'task') members.push(frozen.result.id)
      else if (frozen.result?.kind === 'group') members.push(...frozen.result.members)
      return frozen.signature
    })
    return { signature: { ...sig, kwargs: { ...kwargs, tasks }, options: { ...options, task_id: groupId } }, result: { kind: 'group', id: groupId, members } }
  }
  if (kind === 'chain') {
    const tasks = Array.isArray(kwargs.tasks) ? (kwargs.tasks as Signature[]) : []
    const last = tasks.at(-1)
    if (!last) return { signature: sig, result: undefined }
    const frozen = frozenStep(last)
    return { signature: { ...sig, kwargs: { ...kwargs, tasks: [...tasks.slice(0, -1), frozen.signature] } }, result: frozen.result }
  }
  if (kind === 'chord') {
    const body = kwargs.body as Signature | undefined
    if (!body || typeof body !== 'object') return { signature: sig, result: undefined }
    const frozen = frozenStep(body)
    return { signature: { ...sig, kwargs: { ...kwargs, body: frozen.signature } }, result: frozen.result }
  }
  const id = typeof options.task_id === 'string' ? options.task_id : uuid4()
  return { signature: { ...sig, options: { ...options, task_id: id } }, result: { kind: 'task', id } }
}
