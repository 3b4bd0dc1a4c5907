// A chord's end, as Celery's backends count it (spec §2.3): each header part
// that ends is counted, and the last one sends the body with every header
// result, or fails it with ChordError; a chain that failed fails its chord
// parts too; and celery.chord_unlock, for backends that keep no counts, polls.
import { randomUUID } from 'node:crypto'
import { READY, type ResultBackend } from '../../backends/index.js'
import {
  encodeChordPart,
  encodeResultMeta,
  escapeControl,
  exceptionRepr,
  isExceptionInfo,
  joinChordParts,
  joinResultTree,
  pyRepr,
  resultFromTuple,
  resultTreeTaskIds,
  taskLabel,
  type ChordJoin,
  type ResultMeta,
  type ResultNode,
  type Signature,
  type TaskState,
} from '../../protocol/index.js'
import { applySignature, failChordBody, type Sender } from './canvas-apply.js'
import { optionNumber, optionString } from './chord-header.js'
import type { Request } from './request.js'

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
