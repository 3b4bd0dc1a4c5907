// What a finished task sends on (spec §1.4, §1.7): the same task again for a
// retry, the callbacks and the next link of its chain after a success, the
// errbacks after a failure, its replacement. Each goes out as a new task
// message, applied as Celery's worker applies a canvas (canvas-apply.ts); a
// chord's body, once its last header task is done (spec §2.3), is chord-parts.ts.
import { randomUUID } from 'node:crypto'
import { sendTask } from '../../client/index.js'
import type { EncodedException } from '../../app/index.js'
import {
  accumulatingChord,
  canvasKind,
  signatureList,
  taskLabel,
  withErrbacks,
  withResultTask,
  type Signature,
} from '../../protocol/index.js'
import { applyGroupMembers, applySignature, callRequestErrback, type Sender } from './canvas-apply.js'
import type { Request } from './request.js'

/** Same id, retries + 1, back to the queue it came from. */
export async function republishForRetry(sender: Sender, request: Request, eta: string): Promise<void> {
  const m = request.message
  await sendTask(
    sender.transport,
    m.task,
    {
      id: m.id,
      args: m.args,
      kwargs: m.kwargs,
      retries: m.retries + 1,
      eta,
      expires: m.expires ?? undefined,
      rootId: m.rootId,
      parentId: m.id,
      group: m.group,
      groupIndex: m.groupIndex,
      priority: request.delivery.properties.priority,
      ...sender.app.publishing?.(),
      timeLimit: m.timelimit[0],
      softTimeLimit: m.timelimit[1],
      ignoreResult: m.ignoreResult,
      replyTo: request.delivery.properties.replyTo,
      embed: m.embed,
      origin: sender.hostname,
      queue: request.delivery.exchange === '' ? request.delivery.routingKey : request.delivery.queue,
    },
    sender.app.signals,
  )
}

/** Callbacks and the next link of a chain get the result prepended (unless immutable). */
export async function sendCallbacks(sender: Sender, request: Request, value: unknown): Promise<void> {
  const m = request.message
  const callbacks = (m.embed.callbacks ?? []) as Signature[]
  if (callbacks.length === 1) {
    await applySignature(sender, callbacks[0]!, [value], request)
  } else if (callbacks.length > 1) {
    // Celery's tracer sends several callbacks as one new group (a shared
    // group id, no index), and each callback that is a group as its own.
    const groupId = randomUUID()
    for (const callback of callbacks) {
      if (canvasKind(callback) === 'group') await applySignature(sender, callback, [value], request)
      else await applyGroupMembers(sender, [callback], [value], request, undefined, groupId, false)
    }
  }
  const chain = m.embed.chain
  if (chain && chain.length > 0) {
    const rest = [...chain]
    const next = rest.pop() as Signature
    await applySignature(sender, next, [value], request, rest as Signature[])
  }
}

/**
 * Errbacks get the failed task's id; one that cannot be sent does not stop the
 * others. An errback whose task this worker has with `requestErrback` is
 * called here instead, with (request, exc, traceback), as Celery calls an
 * errback whose function takes more than one argument.
 */
export async function sendErrbacks(
  sender: Sender,
  request: Request,
  onSendError: (task: string, error: Error) => void,
  failure?: { exc: EncodedException; traceback: string | null },
): Promise<void> {
  const m = request.message
  const context = {
    ...request.info(),
    task: m.task,
    root_id: m.rootId,
    parent_id: m.parentId,
    group: m.group,
    group_index: m.groupIndex,
    retries: m.retries,
    errbacks: m.embed.errbacks ?? null,
    callbacks: m.embed.callbacks ?? null,
    chord: m.embed.chord ?? null,
  }
  for (const errback of (m.embed.errbacks ?? []) as Signature[]) {
    const run = failure ? await callRequestErrback(sender, errback, context, failure.exc, failure.traceback) : false
    if (!run) await applySignature(sender, errback, [request.id], request).catch((e: Error) => onSendError(errback.task, e))
  }
}

/**
 * Celery's `Task.replace(sig)` (celery/app/task.py), once the task has ended
 * by calling it: `sig` is sent in the task's place. The task whose result is
 * sig's (sig itself, a chain's last step, a chord's body) takes the task's id
 * (unless it has one), its callbacks, and its group, group index and chord;
 * the errbacks go where Celery's link_error puts them (the task, every step of
 * a chain, a chord's body); the rest of the task's chain follows. A group
 * becomes a chord whose body, celery.accumulate, gives the list of its
 * results, as Celery's `sig |= accumulate.s(index=0)`. Unlike Celery 5.2.6, a
 * chain's callbacks are linked once, not twice.
 */
export async function sendReplacement(sender: Sender, request: Request, sig: Signature): Promise<void> {
  const m = request.message
  let replacement = structuredClone(sig)
  if (canvasKind(replacement) === 'group') replacement = accumulatingChord(replacement)
  const callbacks = (m.embed.callbacks ?? []) as Signature[]
  const patched = withResultTask(replacement, (options) => {
    const out: Record<string, unknown> = { ...options, task_id: typeof options.task_id === 'string' ? options.task_id : m.id }
    if (callbacks.length) out.link = [...signatureList(options.link), ...callbacks]
    if (m.group) {
      out.group_id = m.group
      out.group_index = m.groupIndex
    }
    if (m.embed.chord) out.chord = m.embed.chord
    return out
  })
  if (!patched) throw new Error(`cannot replace ${taskLabel(m.task, m.id)} with ${sig.task}: its result is not one task's`)
  const errbacks = (m.embed.errbacks ?? []) as Signature[]
  const chain = m.embed.chain?.length ? (m.embed.chain as Signature[]) : undefined
  await applySignature(sender, errbacks.length ? withErrbacks(patched, errbacks) : patched, [], request, chain)
}
