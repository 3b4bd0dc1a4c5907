// What `signature(d).apply_async(args)` does in a Celery worker: a plain
// signature sent as one task, a group, chain or chord fanned out here, and a
// chord that cannot run failing its body, its errbacks called or sent.
import { randomUUID } from 'node:crypto'
import type { ResultBackend } from '../../backends/index.js'
import type { Logger } from '../../process/index.js'
import { sendTask, type SendTaskOptions } from '../../client/index.js'
import { routedSend, type Route } from '../../config/index.js'
import type { AppSignals, EncodedException } from '../../app/index.js'
// Canvas shapes (kinds, headers, bodies, where a result task sits) are the protocol's: protocol/messages/canvas.ts.
import {
  argsWith,
  canvasKind,
  chainStepsWithOptions,
  chordBody,
  chordHeader,
  chordHeaderOptions,
  encodeException,
  encodeResultMeta,
  escapeControl,
  resultTuple,
  signatureList,
  tasksOf,
  unrollHeader,
  withResultTask,
  type Signature,
} from '../../protocol/index.js'
import type { Transport } from '../../transport/index.js'
import { chordSize, freezeHeaderMember, optionNumber, optionString } from './chord-header.js'
import type { Request } from './request.js'

export interface Sender {
  transport: Transport
  /** The worker's node name, sent as each message's origin. */
  hostname: string
  /** Where a signature that names no queue goes: the app's task_routes, else its default queue, as Celery's worker routes it. */
  app: {
    routeFor(taskName: string): Route
    readonly signals?: AppSignals
    readonly conf?: Record<string, unknown>
    publishing?(): Pick<SendTaskOptions, 'retryPolicy' | 'sentEvent'>
    readonly tasks?: ReadonlyMap<string, ErrbackTask>
  }
  /** Chords count their header tasks here (spec §2.3). */
  backend: ResultBackend | null
  log: Logger
}

/** What sendErrbacks needs of a registered task to call it as a new-style errback. */
interface ErrbackTask {
  readonly options: { readonly requestErrback?: boolean }
  apply(args: unknown[], kwargs: Record<string, unknown>): Promise<{ status: string }>
}

/** Runs a new-style errback in this worker; false when `errback` is not one (it is then sent as a task). */
export async function callRequestErrback(
  sender: Sender,
  errback: Signature,
  context: Record<string, unknown>,
  exc: EncodedException,
  traceback: string | null,
): Promise<boolean> {
  const task = canvasKind(errback) === 'plain' ? sender.app.tasks?.get(errback.task) : undefined
  if (!task?.options.requestErrback) return false
  // The exception as Python's errback sees it: its type and arguments.
  const error = encodeException(exc.type, exc.args, exc.module, exc.jsName)
  const args = [context, error, traceback, ...(errback.immutable ? [] : (errback.args ?? []))]
  try {
    const result = await task.apply(args, (errback.kwargs ?? {}) as Record<string, unknown>)
    if (result.status === 'FAILURE')
      sender.log.error(`errback ${escapeControl(errback.task)} failed: ${String((result as { result?: unknown }).result)}`)
  } catch (error) {
    sender.log.error(`errback ${escapeControl(errback.task)} failed: ${(error as Error).message}`)
  }
  return true
}

export async function failChordBody(
  sender: Sender,
  backend: ResultBackend,
  body: Signature,
  message: string,
  request: Request,
): Promise<void> {
  const options = (body.options ?? {}) as Record<string, unknown>
  const bodyId = typeof options.task_id === 'string' ? options.task_id : null
  if (bodyId) {
    const meta = encodeResultMeta({
      taskId: bodyId,
      status: 'FAILURE',
      result: { exc_type: 'ChordError', exc_message: [message], exc_module: 'celery.exceptions' },
      traceback: null,
    })
    await backend.store(bodyId, meta, 'FAILURE')
  }
  // Celery's chord_error_from_stack: a new-style errback gets a request made from the body's signature.
  const context = { ...body, ...options, id: bodyId, errbacks: signatureList(options.link_error), delivery_info: {} }
  const exc: EncodedException = { type: 'ChordError', args: [message], module: 'celery.exceptions', message }
  for (const errback of signatureList(options.link_error)) {
    if (await callRequestErrback(sender, errback, context, exc, null)) continue
    await applySignature(sender, errback, [bodyId], request).catch((e: Error) =>
      sender.log.error(`errback ${escapeControl(errback.task)} not sent: ${e.message}`),
    )
  }
}

/**
 * A plain signature is sent as one task. A group, chord or chain signature
 * (a Python client's `chain(a, group(b, c))`, `chain(a, chord([b, c], d))`)
 * is fanned out here, as Celery's worker applies it in-process: the previous
 * result is prepended to each member's args (unless immutable), and the rest
 * of the chain travels on with the members (group) or the body (chord).
 */
export async function applySignature(
  sender: Sender,
  sig: Signature,
  prepend: unknown[],
  parent: Request,
  chain?: Signature[],
): Promise<void> {
  const kind = canvasKind(sig)
  if (kind === 'plain') return sendSignature(sender, sig, prepend, parent, chain)
  const args = argsWith(sig, prepend)
  // A chain or chord that is a chord's body carries the outer chain's rest in its options (applyChord).
  if (!chain?.length && kind !== 'group') chain = signatureList(sig.options?.chain)
  if (kind === 'chain') {
    const steps = chainStepsWithOptions(sig)
    const first = steps[0]
    if (!first) return
    await applySignature(sender, first, args, parent, [...(chain ?? []), ...steps.slice(1).reverse()])
    return
  }
  if (kind === 'group') {
    await applyGroupMembers(
      sender,
      tasksOf(sig),
      args,
      parent,
      chain,
      optionString(sig, 'task_id') ?? randomUUID(),
      true,
      (sig.options ?? {}) as Record<string, unknown>,
    )
    return
  }
  await applyChord(sender, sig, args, parent, chain)
}

/**
 * Celery's `group._prepared` + `_apply_tasks`: a nested group's members join
 * this group in place; a chain or chord member applies itself, with the group
 * id on the task whose result is the member's (a chain's last step, a chord's
 * body). The group's own options go on to every member, as its apply_async
 * passes them: its chord and group_index (set when it is a chord header
 * member) win over a member's; a member's own group_id is kept
 * (Signature._IMMUTABLE_OPTIONS), so the members of a group at the end of a
 * chain in a chord's header count in that chord.
 */
export async function applyGroupMembers(
  sender: Sender,
  members: Signature[],
  args: unknown[],
  parent: Request,
  chain: Signature[] | undefined,
  groupId: string,
  indexed: boolean,
  groupOptions: Record<string, unknown> = {},
): Promise<void> {
  const chord = groupOptions.chord ? (groupOptions.chord as Signature) : undefined
  const groupIndex = typeof groupOptions.group_index === 'number' ? groupOptions.group_index : undefined
  for (const [index, member] of members.entries()) {
    const kind = canvasKind(member)
    if (kind === 'group') {
      await applyGroupMembers(sender, tasksOf(member), args, parent, chain, groupId, indexed, groupOptions)
    } else if (kind === 'chain' || kind === 'chord') {
      const grouped = withResultTask(member, (options) => ({
        ...options,
        group_id: options.group_id ?? groupId,
        ...(groupIndex === undefined ? {} : { group_index: groupIndex }),
        ...(chord ? { chord } : {}),
      }))
      await applySignature(sender, grouped ?? member, args, parent, chain)
    } else {
      const ownIndex = groupIndex ?? optionNumber(member, 'group_index') ?? (indexed ? index : null)
      await sendSignature(sender, member, args, parent, chain, {
        group: optionString(member, 'group_id') ?? groupId,
        groupIndex: ownIndex,
        ...(chord ? { chord } : {}),
      })
    }
  }
}

/**
 * Celery's `chord.run`: the header is frozen with the chord's group id and
 * body (`_freeze_group_tasks`), saved whole when it holds a group (the Redis
 * backend's `apply_chord`), its size set (`_chord._descend`), then every
 * header task is sent carrying the body.
 */
async function applyChord(sender: Sender, sig: Signature, args: unknown[], parent: Request, chain?: Signature[]): Promise<void> {
  const members = unrollHeader(chordHeader(sig))
  const headerOptions = chordHeaderOptions(sig)
  const bodySig = chordBody(sig)
  if (!bodySig) {
    sender.log.error(`Chord ${escapeControl(optionString(sig, 'task_id') ?? '')} not started: it has no body`)
    return
  }
  // The rest of the chain continues after the body, as Celery clones it into the body's options.
  const body: Signature = chain?.length ? { ...bodySig, options: { ...bodySig.options, chain } } : bodySig
  if (members.length === 0) {
    await sendSignature(sender, body, [[]], parent)
    return
  }
  const groupId = typeof headerOptions.task_id === 'string' ? headerOptions.task_id : randomUUID()
  const parts = members.map((member, index) => freezeHeaderMember(member, groupId, index, body, null))
  const holdsGroup = parts.some((part) => part?.node.children)
  // What cannot be run is said once and the body fails, rather than the
  // message going back to the queue to fail again.
  const backend = sender.backend
  const unsupported = members.find((_, index) => parts[index] === null)
  const refusal = unsupported
    ? `chord header member ${unsupported.task} (a ${canvasKind(unsupported)}) ends in no task`
    : !backend?.setChordSize
      ? `the ${backend?.displayUrl ?? 'disabled'} result backend keeps no chord counts`
      : holdsGroup && !backend.saveGroupResult
        ? `the ${backend.displayUrl} result backend keeps no saved groups, which a header holding a group needs`
        : null
  if (refusal || !backend?.setChordSize) {
    sender.log.error(`Chord ${escapeControl(optionString(sig, 'task_id') ?? '')} not started: ${refusal}`)
    if (backend) await failChordBody(sender, backend, body, `NotImplementedError: ${refusal}`, parent)
    return
  }
  if (holdsGroup)
    await backend.saveGroupResult!(groupId, resultTuple({ id: groupId, parent: null, children: parts.map((part) => part!.node) }))
  await backend.setChordSize(
    groupId,
    members.reduce((size, member) => size + chordSize(member), 0),
  )
  for (const [index, part] of parts.entries()) {
    if (canvasKind(part!.sig) !== 'plain') await applySignature(sender, part!.sig, args, parent)
    else await sendSignature(sender, part!.sig, args, parent, undefined, { group: groupId, groupIndex: index, chord: body })
  }
}

interface GroupMembership {
  group: string
  groupIndex: number | null
  chord?: Signature
}

async function sendSignature(
  sender: Sender,
  sig: Signature,
  prepend: unknown[],
  parent: Request,
  chain?: Signature[],
  membership?: GroupMembership,
): Promise<void> {
  const options = (sig.options ?? {}) as Record<string, unknown>
  const args = argsWith(sig, prepend)
  const embed: Record<string, unknown> = {}
  const rest = chain?.length ? chain : signatureList(options.chain)
  if (rest.length) embed.chain = rest
  const chord = membership?.chord ?? (options.chord as Signature | undefined)
  if (chord) embed.chord = chord
  const callbacks = signatureList(options.link)
  if (callbacks.length) embed.callbacks = callbacks
  const errbacks = signatureList(options.link_error)
  if (errbacks.length) embed.errbacks = errbacks
  await sendTask(
    sender.transport,
    sig.task,
    {
      id: typeof options.task_id === 'string' ? options.task_id : undefined,
      args,
      kwargs: sig.kwargs ?? {},
      ...routedSend({ queue: typeof options.queue === 'string' ? options.queue : undefined }, () => sender.app.routeFor(sig.task)),
      rootId: parent.message.rootId ?? parent.id,
      parentId: parent.id,
      replyTo: typeof options.reply_to === 'string' ? options.reply_to : parent.delivery.properties.replyTo,
      group: membership?.group ?? optionString(sig, 'group_id') ?? null,
      groupIndex: membership?.groupIndex ?? optionNumber(sig, 'group_index') ?? null,
      embed,
      origin: sender.hostname,
      ...deliveryOptions(options),
      ...inheritedPriority(sender, parent),
      ...sender.app.publishing?.(),
    },
    sender.app.signals,
  )
}

/**
 * task_inherit_parent_priority: Celery's tracer applies callbacks, chain steps
 * and chord bodies with the parent's delivery priority, over the signature's own.
 */
function inheritedPriority(sender: Sender, parent: Request): Partial<SendTaskOptions> {
  const priority = parent.delivery.properties.priority
  return sender.app.conf?.task_inherit_parent_priority === true && typeof priority === 'number' ? { priority } : {}
}

/** The `.set(...)` / `apply_async` options a signature carries that shape its message, as Celery applies them. */
function deliveryOptions(options: Record<string, unknown>): Partial<SendTaskOptions> {
  const out: Partial<SendTaskOptions> = {}
  if (typeof options.priority === 'number') out.priority = options.priority
  if (typeof options.countdown === 'number') out.countdown = options.countdown
  if (typeof options.eta === 'string') out.eta = options.eta
  if (typeof options.expires === 'number' || typeof options.expires === 'string') out.expires = options.expires
  if (typeof options.time_limit === 'number') out.timeLimit = options.time_limit
  if (typeof options.soft_time_limit === 'number') out.softTimeLimit = options.soft_time_limit
  if (typeof options.ignore_result === 'boolean') out.ignoreResult = options.ignore_result
  if (typeof options.exchange === 'string' && options.exchange !== '') {
    out.exchange = options.exchange
    if (typeof options.routing_key === 'string') out.routingKey = options.routing_key
  }
  return out
}
