// What a finished task sends on (spec §1.4, §1.7): the same task again for a
// retry, the callbacks and the next link of its chain after a success, the
// errbacks after a failure. Each goes out as a new task message.
import { sendTask } from '../app/send-task.js'
import type { Signature } from '../protocol/index.js'
import type { Transport } from '../transport/index.js'
import type { Request } from './request.js'

export interface Sender {
  transport: Transport
  /** The worker's node name, sent as each message's origin. */
  hostname: string
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

async function sendSignature(sender: Sender, sig: Signature, prepend: unknown[], parent: Request, chain?: Signature[]): Promise<void> {
  const options = (sig.options ?? {}) as Record<string, unknown>
  const args = sig.immutable ? [...(sig.args ?? [])] : [...prepend, ...(sig.args ?? [])]
  const embed: Record<string, unknown> = {}
  if (chain && chain.length) embed.chain = chain
  if (Array.isArray(options.link)) embed.callbacks = options.link
  else if (options.link) embed.callbacks = [options.link]
  if (Array.isArray(options.link_error)) embed.errbacks = options.link_error
  else if (options.link_error) embed.errbacks = [options.link_error]
  await sendTask(sender.transport, sig.task, {
    id: typeof options.task_id === 'string' ? options.task_id : undefined,
    args,
    kwargs: sig.kwargs ?? {},
    queue: typeof options.queue === 'string' ? options.queue : undefined,
    rootId: parent.message.rootId ?? parent.id,
    parentId: parent.id,
    replyTo: typeof options.reply_to === 'string' ? options.reply_to : parent.delivery.properties.replyTo,
    embed,
    origin: sender.hostname,
  })
}
