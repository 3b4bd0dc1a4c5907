// What a finished task sends on (spec §1.4, §1.7): the same task again for a
// retry, the callbacks and the next link of its chain after a success, the
// errbacks after a failure, and a chord's body once its last header task is
// done (spec §2.3). Each goes out as a new task message.
import { ChordUnsupportedError, type ResultBackend } from '../app/backends/index.js'
import type { Logger } from '../app/logger.js'
import { sendTask } from '../app/send-task.js'
import { encodeChordPart, encodeResultMeta, joinChordParts, pyRepr, type Signature, type TaskState } from '../protocol/index.js'
import type { Transport } from '../transport/index.js'
import type { Request } from './request.js'

export interface Sender {
  transport: Transport
  /** The worker's node name, sent as each message's origin. */
  hostname: string
  /** Where a signature that names no queue goes: the app's, as Celery's worker routes it. */
  app: { readonly defaultQueue: string }
}

/** Same id, retries + 1, back to the queue it came from. */
export async function republishForRetry(sender: Sender, request: Request, eta: string): Promise<void> {
  const m = request.message
  await sendTask(sender.transport, m.task, {
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
    timeLimit: m.timelimit[0],
    softTimeLimit: m.timelimit[1],
    ignoreResult: m.ignoreResult,
    replyTo: request.delivery.properties.replyTo,
    embed: m.embed,
    origin: sender.hostname,
    queue: request.delivery.exchange === '' ? request.delivery.routingKey : request.delivery.queue,
  })
}

/** Callbacks and the next link of a chain get the result prepended (unless immutable). */
export async function sendCallbacks(sender: Sender, request: Request, value: unknown): Promise<void> {
  const m = request.message
  for (const callback of m.embed.callbacks ?? []) await sendSignature(sender, callback as Signature, [value], request)
  const chain = m.embed.chain
  if (chain && chain.length > 0) {
    const rest = [...chain]
    const next = rest.pop() as Signature
    await sendSignature(sender, next, [value], request, rest as Signature[])
  }
}

/** Errbacks get the failed task's id; one that cannot be sent does not stop the others. */
export async function sendErrbacks(sender: Sender, request: Request, onSendError: (task: string, error: Error) => void): Promise<void> {
  for (const errback of request.message.embed.errbacks ?? []) {
    await sendSignature(sender, errback as Signature, [request.id], request).catch((e: Error) => onSendError(errback.task, e))
  }
}

export interface ChordSender extends Sender {
  backend: ResultBackend | null
  log: Logger
}

/**
 * Celery's `on_chord_part_return` for a header task that ended (SUCCESS,
 * FAILURE or REVOKED; a retry is not an end). The part that completes the
 * chord sends the body with every header result, in group order, prepended
 * to its args; if a part failed, the body fails with ChordError instead and
 * its errbacks run, as `chord_error_from_stack` does.
 */
export async function returnChordPart(sender: ChordSender, request: Request, state: TaskState, result: unknown): Promise<void> {
  const m = request.message
  const body = m.embed.chord
  if (!body || !m.group) return
  const backend = sender.backend
  if (!backend?.chordPartReturn) {
    sender.log.error(`Chord ${m.group}: ${m.task}[${m.id}] is a header task, but the ${backend?.displayUrl ?? 'disabled'} result backend keeps no chord counts; the body will not run`)
    return
  }
  let join: ReturnType<typeof joinChordParts>
  try {
    const parts = await backend.chordPartReturn(m.group, m.groupIndex, encodeChordPart(m.id, state, result))
    if (!parts) return
    join = joinChordParts(parts)
  } catch (error) {
    if (!(error instanceof ChordUnsupportedError)) throw error
    join = { ok: false, error: `Join error: NotImplementedError(${pyRepr(error.message)})` }
  }
  if (join.ok) {
    await sendSignature(sender, body, [join.values], request)
    return
  }
  sender.log.error(`Chord ${pyRepr(m.group)} raised: ChordError(${pyRepr(join.error)})`)
  await failChordBody(sender, backend, body, join.error, request)
}

async function failChordBody(sender: ChordSender, backend: ResultBackend, body: Signature, message: string, request: Request): Promise<void> {
  const options = (body.options ?? {}) as Record<string, unknown>
  const bodyId = typeof options.task_id === 'string' ? options.task_id : null
  if (bodyId) {
    const meta = encodeResultMeta({ taskId: bodyId, status: 'FAILURE', result: { exc_type: 'ChordError', exc_message: [message], exc_module: 'celery.exceptions' }, traceback: null })
    await backend.store(bodyId, meta, 'FAILURE')
  }
  for (const errback of signatures(options.link_error)) {
    await sendSignature(sender, errback, [bodyId], request).catch((e: Error) => sender.log.error(`errback ${errback.task} not sent: ${e.message}`))
  }
}

function signatures(value: unknown): Signature[] {
  if (Array.isArray(value)) return value as Signature[]
  return value ? [value as Signature] : []
}

async function sendSignature(sender: Sender, sig: Signature, prepend: unknown[], parent: Request, chain?: Signature[]): Promise<void> {
  const options = (sig.options ?? {}) as Record<string, unknown>
  const args = sig.immutable ? [...(sig.args ?? [])] : [...prepend, ...(sig.args ?? [])]
  const embed: Record<string, unknown> = {}
  if (chain && chain.length) embed.chain = chain
  const callbacks = signatures(options.link)
  if (callbacks.length) embed.callbacks = callbacks
  const errbacks = signatures(options.link_error)
  if (errbacks.length) embed.errbacks = errbacks
  await sendTask(sender.transport, sig.task, {
    id: typeof options.task_id === 'string' ? options.task_id : undefined,
    args,
    kwargs: sig.kwargs ?? {},
    queue: typeof options.queue === 'string' ? options.queue : sender.app.defaultQueue,
    rootId: parent.message.rootId ?? parent.id,
    parentId: parent.id,
    replyTo: typeof options.reply_to === 'string' ? options.reply_to : parent.delivery.properties.replyTo,
    embed,
    origin: sender.hostname,
  })
}
