// How the app sends a canvas: a chain (its first task carrying the rest), a
// group, many signatures at once, a chord (counted in the result backend, or
// joined by celery.chord_unlock on the SQL backends), and a part added to a
// running chord. App's chain(), group(), sendMany(), chord() and addToChord()
// are these, typed; the shapes themselves are the protocol's (canvas.ts).
import { randomUUID } from 'node:crypto'
import { type Signature, type TaskEmbed, canvasKind, chainEmbed, chordBody, chordHeader, frozenStep, uuid4 } from '../protocol/index.js'
import type { Transport } from '../transport/index.js'
import { UnsupportedBackendError } from '../backends/index.js'
import { sendTask, sendTaskAs, type SendTaskOptions } from '../client/index.js'
import type { App } from './app.js'
import { AsyncResult, GroupResult } from './async-result.js'
import { applyChainEagerly, applyChordEagerly, applyGroupEagerly, isAlwaysEager, EagerResult } from './eager.js'
import type { SendPlan } from './send-plan.js'
import { SendManyError } from './send-many-error.js'

/** What a canvas send needs of the app beyond its public surface: the send plan of the conf as it is now, and a result by id. */
export interface CanvasSender {
  readonly app: App
  plan(): SendPlan
  readonly resultOf: (id: string) => AsyncResult
}

/**
 * `chain(a.s(1), b.s(), c.s())`: the first task carries the rest, reversed
 * (spec §1.4). As Celery's chain freezes its steps, each later step gets its
 * task id now, so the result handed back is the last step's (a chord's
 * body's), and for a chain ending in a group, that group's GroupResult.
 */
export async function sendChain(s: CanvasSender, signatures: Signature[]): Promise<AsyncResult | GroupResult> {
  const { app } = s
  const [first, ...rest] = signatures
  if (!first) throw new Error('chain() needs at least one signature')
  if (isAlwaysEager(app)) return applyChainEagerly(app, signatures)
  const transport = await app.transport()
  if (app.config.resultBackend?.startsWith('rpc://')) await app.backend()
  const steps = rest.map(frozenStep)
  const id = await sendTask(
    transport,
    first.task,
    {
      id: typeof first.options?.task_id === 'string' ? first.options.task_id : undefined,
      args: first.args,
      kwargs: first.kwargs,
      embed: { chain: chainEmbed(steps.map((step) => step.signature)) },
      ...s.plan().routed(first.task, first.options?.queue),
      replyTo: app.replyTo(),
    },
    app.signals,
    app.taskEncoder(),
  )
  const last = steps.length ? steps.at(-1)!.result : { kind: 'task' as const, id }
  if (last?.kind === 'group')
    return new GroupResult(
      last.id,
      last.members.map((member) => new AsyncResult(member, app)),
    )
  return new AsyncResult(last?.id ?? id, app)
}

/**
 * `group(a.s(1), b.s(2))`: every task sent at once under one group id
 * (headers `group`, `group_index`), each to its own queue or the default.
 */
export async function sendGroup(s: CanvasSender, signatures: Signature[]): Promise<GroupResult> {
  if (isAlwaysEager(s.app)) return applyGroupEagerly(s.app, signatures)
  const groupId = randomUUID()
  const results = await sendSignatures(s, signatures, (index) => ({ group: groupId, groupIndex: index }))
  return new GroupResult(groupId, results)
}

/** App.sendMany(): every signature at once, each message the one sendTask would send. */
export async function sendMany(s: CanvasSender, signatures: Signature[]): Promise<AsyncResult[]> {
  if (isAlwaysEager(s.app))
    return Promise.all(
      signatures.map((sig) =>
        s.app.sendTask(sig.task, sig.args, sig.kwargs, {
          ...(typeof sig.options.queue === 'string' ? { queue: sig.options.queue } : {}),
          ...(typeof sig.options.task_id === 'string' ? { id: sig.options.task_id } : {}),
        }),
      ),
    )
  return sendSignatures(s, signatures, () => ({}))
}

async function sendSignatures(
  s: CanvasSender,
  signatures: Signature[],
  extra: (index: number) => Partial<SendTaskOptions>,
): Promise<AsyncResult[]> {
  const { app } = s
  const transport = await app.transport()
  if (app.config.resultBackend?.startsWith('rpc://')) await app.backend()
  const plan = s.plan()
  // Started together, in one turn, so the transport writes them as one batch
  // (one LPUSH per list on Redis, one socket write on RabbitMQ); each still
  // resolves on its own confirm.
  const sends = new Array<Promise<AsyncResult>>(signatures.length)
  const ids = new Array<string>(signatures.length)
  for (let index = 0; index < signatures.length; index++) {
    const sig = signatures[index]!
    const o = signatureSendOptions(app, sig, plan)
    Object.assign(o, extra(index))
    // The id the encoder would draw, drawn here: a failed send's outcome names its task.
    ids[index] = o.id ??= uuid4()
    sends[index] = sendTaskAs(transport, sig.task, o, app.signals, plan.encoder, s.resultOf)
  }
  try {
    return await Promise.all(sends)
  } catch {
    // Each send settles on the broker's answer for it: wait for all, then say which the broker has.
    throw SendManyError.from(signatures, ids, await Promise.allSettled(sends), s.resultOf)
  }
}

/**
 * Celery's `Task.add_to_chord(sig)`, for a task that is a header part of a
 * chord: the chord's count grows by one (the Redis backend's `.t` key), then
 * `sig` is sent as a part of it (a chord `sig`: its body is).
 */
export async function addToChord(
  s: CanvasSender,
  sig: Signature,
  part: { group: string | null; groupIndex: number | null; chord: unknown; rootId: string | null; parentId: string },
): Promise<void> {
  const { app } = s
  if (!part.chord || !part.group) throw Object.assign(new Error('Current task is not member of any chord'), { name: 'ValueError' })
  const kind = canvasKind(sig)
  if (kind !== 'plain' && kind !== 'chord') throw new TypeError(`addToChord(sig): tsq adds a task or a chord to a chord, not a ${kind}`)
  const backend = await app.backend()
  if (!backend.addToChord)
    throw new UnsupportedBackendError(
      `add_to_chord needs a result backend that counts chords by key (redis://); ${backend.displayUrl} has none`,
    )
  await backend.addToChord(part.group)
  const membership = { group_id: part.group, group_index: part.groupIndex, chord: part.chord }
  if (kind === 'chord') {
    const body = chordBody(sig)
    if (!body) throw new TypeError('addToChord(sig): the chord has no body')
    await sendChord(s, chordHeader(sig), { ...body, options: { ...body.options, ...membership } })
    return
  }
  const transport = await app.transport()
  const o = signatureSendOptions(app, sig, s.plan())
  Object.assign(o, {
    group: part.group,
    groupIndex: part.groupIndex,
    rootId: part.rootId,
    parentId: part.parentId,
    embed: { chord: part.chord as TaskEmbed['chord'] },
  })
  await sendTaskAs(transport, sig.task, o, app.signals, app.taskEncoder(), s.resultOf)
}

/**
 * `chord([a.s(1), a.s(2)], tsum.s())`: the header tasks, then, once the last
 * of them ends, the body with their results in order (spec §2.3). The
 * header's end is counted in the result backend, as Celery's Redis backend
 * counts it, so tsq and Python workers can share the header; like Celery,
 * it needs a backend that keeps those counts (redis://, or the embedded
 * file:// store).
 */
export async function sendChord(s: CanvasSender, header: Signature[], body: Signature): Promise<AsyncResult> {
  const { app } = s
  if (isAlwaysEager(app)) {
    const result = await applyChordEagerly(app, header, body)
    // A group body: one result whose get() is its list, under the group's id.
    return result instanceof GroupResult ? new EagerResult(result.id, app, 'SUCCESS', await result.get()) : result
  }
  const transport = await app.transport()
  const backend = await app.backend()
  const bodyId = randomUUID()
  const frozenBody = { ...body, options: { ...body.options, task_id: bodyId, reply_to: app.replyTo() } }
  if (header.length === 0) {
    await sendTask(
      transport,
      body.task,
      { ...signatureSendOptions(app, frozenBody, s.plan()), args: [[], ...body.args] },
      app.signals,
      app.taskEncoder(),
    )
    return new AsyncResult(bodyId, app)
  }
  if (backend.chordUnlock) return chordWithUnlock(s, transport, header, frozenBody, bodyId)
  if (!backend.setChordSize)
    throw new UnsupportedBackendError(`chords need a result backend that counts them (redis:// or file://); ${backend.displayUrl} has none`)
  const groupId = randomUUID()
  await backend.setChordSize(groupId, header.length)
  await sendSignatures(s, header, (index) => ({ group: groupId, groupIndex: index, embed: { chord: frozenBody } }))
  return new AsyncResult(bodyId, app)
}

/**
 * Celery's fallback_chord_unlock, for the SQL backends: the header tasks,
 * then `celery.chord_unlock` (in a second, to the body's queue) with the
 * header's ids, which polls them and sends the body.
 */
async function chordWithUnlock(
  s: CanvasSender,
  transport: Transport,
  header: Signature[],
  body: Signature,
  bodyId: string,
): Promise<AsyncResult> {
  const { app } = s
  const groupId = randomUUID()
  const ids: string[] = []
  for (const [index, sig] of header.entries()) {
    ids.push(
      await sendTask(
        transport,
        sig.task,
        { ...signatureSendOptions(app, sig, s.plan()), group: groupId, groupIndex: index, embed: { chord: { ...body } } },
        app.signals,
        app.taskEncoder(),
      ),
    )
  }
  await sendTask(
    transport,
    'celery.chord_unlock',
    {
      args: [groupId, body],
      kwargs: { interval: 1, max_retries: null, result: ids.map((id) => [[id, null], null]) },
      countdown: 1,
      ...s.plan().routed(body.task, body.options.queue),
      replyTo: app.replyTo(),
    },
    app.signals,
    app.taskEncoder(),
  )
  return new AsyncResult(bodyId, app)
}

function signatureSendOptions(app: App, sig: Signature, plan: SendPlan): SendTaskOptions {
  const queue = sig.options.queue
  const id = sig.options.task_id
  const o: SendTaskOptions = {
    id: typeof id === 'string' ? id : undefined,
    args: sig.args,
    kwargs: sig.kwargs,
    queue: typeof queue === 'string' ? queue : undefined,
    exchange: undefined,
    routingKey: undefined,
  }
  plan.routeInto(o, sig.task)
  o.replyTo = app.replyTo()
  return o
}
