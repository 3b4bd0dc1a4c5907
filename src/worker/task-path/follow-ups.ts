// What a finished task sends on (spec §1.4, §1.7): the same task again for a
// retry, the callbacks and the next link of its chain after a success, the
// errbacks after a failure, and a chord's body once its last header task is
// done (spec §2.3). Each goes out as a new task message.
import { randomUUID } from 'node:crypto'
import { READY, type ResultBackend } from '../../backends/index.js'
import type { Logger } from '../../process/index.js'
import { sendTask, type SendTaskOptions } from '../../client/index.js'
import { routedSend, type Route } from '../../config/index.js'
import type { AppSignals, EncodedException } from '../../app/index.js'
import {
  encodeChordPart,
  encodeException,
  encodeResultMeta,
  exceptionRepr,
  isExceptionInfo,
  joinChordParts,
  joinResultTree,
  pyRepr,
  resultFromTuple,
  resultTreeTaskIds,
  resultTuple,
  type ChordJoin,
  type ResultMeta,
  type ResultNode,
  type Signature,
  type TaskState,
} from '../../protocol/index.js'
// Canvas shapes (kinds, headers, bodies, where a result task sits) are the protocol's: protocol/messages/canvas.ts.
import {
  accumulatingChord,
  argsWith,
  canvasKind,
  chainStepsWithOptions,
  chordBody,
  chordHeader,
  chordHeaderOptions,
  signatureList,
  tasksOf,
  unrollHeader,
  withErrbacks,
  withResultTask,
} from '../../protocol/index.js'
import type { Transport } from '../../transport/index.js'
import type { Request } from './request.js'
import { escapeControl, taskLabel } from '../../protocol/index.js'

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

/** Runs a new-style errback in this worker; false when `errback` is not one (it is then sent as a task). */
async function callRequestErrback(
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

/**
 * Celery's `on_chord_part_return` for a header task that ended (SUCCESS,
 * FAILURE or REVOKED; a retry is not an end). The part that completes the
 * chord sends the body with every header result, in group order, prepended
 * to its args; if a part failed, the body fails with ChordError instead and
 * its errbacks run, as `chord_error_from_stack` does.
 */
export async function returnChordPart(sender: Sender, request: Request, state: TaskState, result: unknown): Promise<void> {
  const m = request.message
  await returnPartOf(
    sender,
    request,
    { id: m.id, task: m.task, group: m.group, groupIndex: m.groupIndex, body: m.embed.chord as Signature | undefined },
    state,
    result,
  )
}

/** A chord header part: the task itself, or a later step of its chain that carries the chord. */
interface ChordPart {
  id: string
  task: string
  group: string | null
  groupIndex: number | null
  body: Signature | undefined
}

async function returnPartOf(sender: Sender, request: Request, part: ChordPart, state: TaskState, result: unknown): Promise<void> {
  const m = part
  const body = part.body
  if (!body || !m.group) return
  const backend = sender.backend
  if (backend?.chordUnlock) return
  if (!backend?.chordPartReturn) {
    sender.log.error(
      `Chord ${escapeControl(String(m.group))}: ${taskLabel(m.task, m.id)} is a header task, but the ${backend?.displayUrl ?? 'disabled'} result backend keeps no chord counts; the body will not run`,
    )
    return
  }
  const parts = await backend.chordPartReturn(m.group, m.groupIndex, encodeChordPart(m.id, state, result), m.id)
  if (!parts) return
  let join: ChordJoin
  try {
    // A header saved whole (it holds a group) is joined through the stored
    // results, as Celery's GroupResult.restore(group).join_native.
    const saved = await backend.restoreGroupResult?.(m.group)
    join = saved ? await joinSavedHeader(sender, backend, saved) : joinChordParts(parts)
  } catch (error) {
    // Celery's catch-all around the join: the body fails with it.
    join = { ok: false, error: `Join error: ${(error as Error).name}(${pyRepr((error as Error).message)})` }
  }
  let error: string
  if (join.ok) {
    try {
      await applySignature(sender, body, [join.values], request)
      return
    } catch (sendError) {
      // The counts are gone with the last part: the body fails, as Celery's "Callback error".
      error = `Callback error: ${(sendError as Error).name}(${pyRepr((sendError as Error).message)})`
    }
  } else {
    error = join.error
  }
  sender.log.error(`Chord ${pyRepr(m.group)} raised: ChordError(${pyRepr(error)})`)
  await failChordBody(sender, backend, body, error, request)
}

/**
 * The body's argument from a header saved whole: every result it names, each
 * waited for up to result_chord_join_timeout (3 s), joined in its shape.
 */
async function joinSavedHeader(sender: Sender, backend: ResultBackend, saved: unknown): Promise<ChordJoin> {
  const header = resultFromTuple(saved)
  const setting = sender.app.conf?.result_chord_join_timeout
  const timeout = typeof setting === 'number' && setting > 0 ? setting : 3
  const deadline = Date.now() + timeout * 1000
  const metas = new Map<string, ResultMeta>()
  await Promise.all(
    [...new Set(resultTreeTaskIds(header))].map(async (id) => {
      let meta = await backend.get(id)
      if (!meta || !READY.has(meta.status)) meta = await backend.waitReady(id, Math.max(0, deadline - Date.now())).catch(() => meta)
      if (meta) metas.set(id, meta)
    }),
  )
  return joinResultTree(header, (id) => metas.get(id), timeout)
}

/**
 * Celery's mark_as_failure for a task with a chain after it: every later step
 * with a task id is stored as failed with the same error (so whoever waits on
 * the chain's end hears of it), and a step that is a chord header part counts
 * its part as failed, so the chord fails instead of waiting for ever.
 */
export async function failChainRest(sender: Sender, request: Request, result: unknown, traceback: string | null): Promise<void> {
  const backend = sender.backend
  for (const step of (request.message.embed.chain ?? []) as Signature[]) {
    const options = (step.options ?? {}) as Record<string, unknown>
    // A step sent by a tsq worker gets its id when it is sent; a chord part must still count.
    const id = typeof options.task_id === 'string' ? options.task_id : options.chord ? randomUUID() : null
    if (!id) continue
    if (backend) await backend.store(id, encodeResultMeta({ taskId: id, status: 'FAILURE', result, traceback }), 'FAILURE')
    if (options.chord) {
      const part: ChordPart = {
        id,
        task: step.task,
        group: optionString(step, 'group_id') ?? null,
        groupIndex: optionNumber(step, 'group_index') ?? null,
        body: options.chord as Signature,
      }
      await returnPartOf(sender, request, part, 'FAILURE', result)
    }
  }
}

/**
 * Celery's `celery.chord_unlock` (celery/app/builtins.py), which backends
 * without chord counts (the SQL ones) send in place of counting: the header's
 * results are polled; not all ready, it retries after `interval` seconds;
 * ready, the body is sent with their values, or fails with ChordError naming
 * the first failed dependency. Run in the worker's main process, which holds
 * the result backend and the broker.
 */
export async function unlockChord(
  sender: Sender,
  request: Request,
): Promise<{ status: 'ignored' } | { status: 'retry'; countdown: number }> {
  const m = request.message
  const [groupId, callback] = m.args as [string, Signature]
  const kwargs = m.kwargs as { interval?: number | null; result?: unknown[] }
  const backend = sender.backend
  if (!backend) throw new Error(`chord ${groupId}: this worker has no result backend to read the header from`)
  // Each member as AsyncResult.as_tuple(): [[id, parent], null], a group's with its members.
  const header: ResultNode = { id: groupId, parent: null, children: (kwargs.result ?? []).map((member) => resultFromTuple(member)) }
  const ids = resultTreeTaskIds(header)
  const metas = new Map(await Promise.all(ids.map(async (id) => [id, await backend.get(id)] as const)))
  if ([...metas.values()].some((meta) => !meta || !READY.has(meta.status)))
    return { status: 'retry', countdown: typeof kwargs.interval === 'number' ? kwargs.interval : 1 }
  const failed = ids.find((id) => metas.get(id)!.status !== 'SUCCESS')
  if (failed !== undefined) {
    const meta = metas.get(failed)!
    const exc = isExceptionInfo(meta.result) ? exceptionRepr(meta.result) : meta.status
    const reason = `Dependency ${failed} raised ${exc}`
    sender.log.error(`Chord ${pyRepr(groupId)} raised: ChordError(${pyRepr(reason)})`)
    await failChordBody(sender, backend, callback, reason, request)
    return { status: 'ignored' }
  }
  const join = joinResultTree(header, (id) => metas.get(id))
  await applySignature(sender, callback, [join.ok ? join.values : []], request)
  return { status: 'ignored' }
}

async function failChordBody(sender: Sender, backend: ResultBackend, body: Signature, message: string, request: Request): Promise<void> {
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

// ---- canvas: what `signature(d).apply_async(args)` does in a Celery worker --

/**
 * A plain signature is sent as one task. A group, chord or chain signature
 * (a Python client's `chain(a, group(b, c))`, `chain(a, chord([b, c], d))`)
 * is fanned out here, as Celery's worker applies it in-process: the previous
 * result is prepended to each member's args (unless immutable), and the rest
 * of the chain travels on with the members (group) or the body (chord).
 */
async function applySignature(sender: Sender, sig: Signature, prepend: unknown[], parent: Request, chain?: Signature[]): Promise<void> {
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
async function applyGroupMembers(
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

/**
 * Celery's freeze of a chord header member with the chord's group id, the
 * member's index and the body. The task whose result is the member's (itself,
 * a chain's last step, a chord's body) gets its id now and carries the group,
 * index and body. A group there (a chain ending in one) carries them too, and
 * its members (nested groups spliced in) each get their own index. Such a
 * group without an id gets a new one, where Celery's _freeze_group_tasks
 * gives it the chord's: a Python worker that applies the group sets a chord
 * size under the group's id, which would cut the chord short.
 * Null when the member ends in no task (an empty chain, a chord without body).
 */
function freezeHeaderMember(
  sig: Signature,
  groupId: string,
  index: number,
  body: Signature,
  parent: ResultNode | null,
): { sig: Signature; node: ResultNode } | null {
  const options = (sig.options ?? {}) as Record<string, unknown>
  switch (canvasKind(sig)) {
    case 'plain': {
      const id = typeof options.task_id === 'string' ? options.task_id : randomUUID()
      return {
        sig: { ...sig, options: { ...options, task_id: id, group_id: options.group_id ?? groupId, group_index: index, chord: body } },
        node: { id, parent, children: null },
      }
    }
    case 'chain': {
      const steps = tasksOf(sig)
      const last = steps.at(-1)
      if (!last) return null
      // The step before is the result's parent, as Celery's as_tuple() records it.
      const before = steps.at(-2)
      const beforeId = before && canvasKind(before) === 'plain' ? optionString(before, 'task_id') : undefined
      const frozen = freezeHeaderMember(last, groupId, index, body, beforeId ? { id: beforeId, parent: null, children: null } : null)
      return frozen && { sig: { ...sig, kwargs: { ...(sig.kwargs ?? {}), tasks: [...steps.slice(0, -1), frozen.sig] } }, node: frozen.node }
    }
    case 'chord': {
      const inner = chordBody(sig)
      const frozen = inner ? freezeHeaderMember(inner, groupId, index, body, parent) : null
      return frozen && { sig: { ...sig, kwargs: { ...(sig.kwargs ?? {}), body: frozen.sig } }, node: frozen.node }
    }
    case 'group': {
      const id = typeof options.task_id === 'string' ? options.task_id : randomUUID()
      const members = unrollHeader(tasksOf(sig)).map((member, i) => freezeHeaderMember(member, groupId, i, body, null))
      if (members.some((member) => member === null)) return null
      return {
        sig: {
          ...sig,
          kwargs: { ...(sig.kwargs ?? {}), tasks: members.map((member) => member!.sig) },
          options: { ...options, task_id: id, group_id: groupId, chord: body, group_index: index },
        },
        node: { id, parent, children: members.map((member) => member!.node) },
      }
    }
  }
}

/**
 * Celery's `_chord._descend`: how many parts a header member counts for in
 * its chord. A task one, a group the sum of its members, a chain its last
 * step that counts any, a chord its body.
 */
export function chordSize(sig: Signature): number {
  switch (canvasKind(sig)) {
    case 'plain':
      return 1
    case 'group':
      return tasksOf(sig).reduce((size, member) => size + chordSize(member), 0)
    case 'chain':
      for (const step of [...tasksOf(sig)].reverse()) {
        const size = chordSize(step)
        if (size > 0) return size
      }
      return 0
    case 'chord': {
      const body = chordBody(sig)
      return body ? chordSize(body) : 0
    }
  }
}

function optionString(sig: Signature, key: string): string | undefined {
  const v = (sig.options as Record<string, unknown> | undefined)?.[key]
  return typeof v === 'string' ? v : undefined
}

function optionNumber(sig: Signature, key: string): number | undefined {
  const v = (sig.options as Record<string, unknown> | undefined)?.[key]
  return typeof v === 'number' ? v : undefined
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

/** The `.set(...)` / `apply_async` options a signature carries that shape its message, as Celery applies them. */
/**
 * task_inherit_parent_priority: Celery's tracer applies callbacks, chain steps
 * and chord bodies with the parent's delivery priority, over the signature's own.
 */
function inheritedPriority(sender: Sender, parent: Request): Partial<SendTaskOptions> {
  const priority = parent.delivery.properties.priority
  return sender.app.conf?.task_inherit_parent_priority === true && typeof priority === 'number' ? { priority } : {}
}

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
