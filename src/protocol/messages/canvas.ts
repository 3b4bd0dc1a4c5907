// Celery's canvas as it travels (spec §1.4, celery/canvas.py): the signature,
// the kind a signature is (a task, a chain, a group, a chord), the shapes
// each kind's kwargs take, and freezing. The client (app/), eager runs and the
// worker's follow-ups all read canvases through these, so a shape a Python
// client sends is understood the same way wherever it lands.
import { randomUUID } from 'node:crypto'
import { uuid4 } from '../uuid.js'

/**
 * The key of a signature's result type. It exists in types only (a message
 * never carries it): `add.s(2)` is a `Signature<number>` when `add` returns a
 * number, so a chain, group or chord of it is typed by what its task returns.
 */
export declare const signatureResult: unique symbol

/**
 * A task call written down to be sent later (a callback, a chain step, a
 * group or chord member, a chord's body): what `add.s(2, 2)` makes, and what
 * Python's signatures are as JSON. `subtask_type` names a group, chain or
 * chord (or Celery's chunks, xmap, xstarmap); null for a task. `R` is what its
 * task returns, where the code that made it knows (unknown otherwise).
 */
export interface Signature<R = unknown> {
  task: string
  args: unknown[]
  kwargs: Record<string, unknown>
  options: Record<string, unknown>
  subtask_type: string | null
  immutable: boolean
  readonly [signatureResult]?: R
}

/** What a signature's task returns, as far as its type says: `ResultOf<typeof sig>`. */
export type ResultOf<S> = S extends Signature<infer R> ? R : unknown

export type CanvasKind = 'plain' | 'group' | 'chain' | 'chord'

/** `add.s(...)`: a task's signature; `immutable` (`.si()`) takes no parent result. `R` types what its task returns. */
export function signature<R = unknown>(
  task: string,
  args: unknown[] = [],
  kwargs: Record<string, unknown> = {},
  options: { immutable?: boolean } & Record<string, unknown> = {},
): Signature<R> {
  const { immutable = false, ...rest } = options
  return { task, args, kwargs, options: rest, subtask_type: null, immutable }
}

/** What `sig` is: by its `subtask_type`, else by its task's name (`celery.chord`...), else a plain task. */
export function canvasKind(sig: Signature): CanvasKind {
  const type = sig.subtask_type
  if (type === 'group' || type === 'chain' || type === 'chord') return type
  if (sig.task === 'celery.group') return 'group'
  if (sig.task === 'celery.chain') return 'chain'
  if (sig.task === 'celery.chord') return 'chord'
  return 'plain'
}

/** A value that holds signatures (`link`, `link_error`, a group's `tasks`): none, one, or a list. */
export function signatureList(value: unknown): Signature[] {
  if (Array.isArray(value)) return value as Signature[]
  return value ? [value as Signature] : []
}

/** A signature's kwargs, where a chain or group keeps `tasks` and a chord `header` and `body`. */
function kwargsOf(sig: Signature): Record<string, unknown> {
  return (sig.kwargs ?? {}) as Record<string, unknown>
}

/** A group's members, a chain's steps (in order): its kwargs' `tasks`. */
export function tasksOf(sig: Signature): Signature[] {
  return signatureList(kwargsOf(sig).tasks)
}

/** A chord's body, if it has one. */
export function chordBody(sig: Signature): Signature | undefined {
  const body = kwargsOf(sig).body
  return body && typeof body === 'object' ? (body as Signature) : undefined
}

/**
 * A chord's header members, as Celery's `_maybe_group` reads them: a list as
 * it is, a group's (or a chain's) tasks, one signature as a list of one. A
 * chord Celery froze (one inside a chain) carries its header as a group.
 */
export function chordHeader(sig: Signature): Signature[] {
  const header = kwargsOf(sig).header
  if (Array.isArray(header)) return header as Signature[]
  if (!header || typeof header !== 'object') return []
  const kind = canvasKind(header as Signature)
  return kind === 'group' || kind === 'chain' ? tasksOf(header as Signature) : [header as Signature]
}

/** The options the chord's header was given as a group (its `task_id` is the chord's group id); none for a list. */
export function chordHeaderOptions(sig: Signature): Record<string, unknown> {
  const header = kwargsOf(sig).header
  return (header && typeof header === 'object' && !Array.isArray(header) ? ((header as Signature).options ?? {}) : {}) as Record<
    string,
    unknown
  >
}

/** A signature's arguments when it runs after a parent: the parent's result first (`prepend`), unless it is immutable. */
export function argsWith(sig: Signature, prepend: readonly unknown[]): unknown[] {
  return sig.immutable ? [...(sig.args ?? [])] : [...prepend, ...(sig.args ?? [])]
}

/** A chain's steps as the first task's message carries them (`embed.chain`): the rest, the next one last. */
export function chainEmbed(steps: readonly Signature[]): Signature[] {
  return [...steps].reverse()
}

/**
 * Celery 5.2.6's `group._freeze_unroll`, which `chord.run` uses on a header:
 * nested groups are spliced in with `deque.extendleft`, which reverses each
 * nested group's members. Kept, so a body gets its results in the same order
 * whichever kind of worker started the chord.
 */
export function unrollHeader(members: readonly Signature[]): Signature[] {
  const stack = [...members]
  const flat: Signature[] = []
  for (let member = stack.shift(); member; member = stack.shift()) {
    if (canvasKind(member) === 'group') stack.unshift(...tasksOf(member).reverse())
    else flat.push(member)
  }
  return flat
}

/**
 * A copy of `sig` with `patch` applied to the options of the one task whose
 * result is sig's result: a chain's last step, a chord's body, found through
 * any nesting. Null when that is a group (or nothing), which has no one task.
 */
export function withResultTask(sig: Signature, patch: (options: Record<string, unknown>) => Record<string, unknown>): Signature | null {
  switch (canvasKind(sig)) {
    case 'plain':
      return { ...sig, options: patch({ ...sig.options }) }
    case 'chain': {
      const steps = tasksOf(sig)
      const last = steps.at(-1)
      const patched = last ? withResultTask(last, patch) : null
      return patched ? { ...sig, kwargs: { ...kwargsOf(sig), tasks: [...steps.slice(0, -1), patched] } } : null
    }
    case 'chord': {
      const body = kwargsOf(sig).body as Signature | undefined
      const patched = body ? withResultTask(body, patch) : null
      return patched ? { ...sig, kwargs: { ...kwargsOf(sig), body: patched } } : null
    }
    default:
      return null
  }
}

/** What gives `sig` its result: one task ('plain'), or a group (a chain's last step, a chord's body, looked through). */
export function resultTaskKind(sig: Signature): 'plain' | 'group' | 'none' {
  switch (canvasKind(sig)) {
    case 'plain':
      return 'plain'
    case 'group':
      return 'group'
    case 'chain': {
      const last = tasksOf(sig).at(-1)
      return last ? resultTaskKind(last) : 'none'
    }
    case 'chord': {
      const body = chordBody(sig)
      return body ? resultTaskKind(body) : 'none'
    }
  }
}

/** `sig.link_error(e)` for each errback, as Celery's canvas places it: a chain's on every step, a group's on every member, a chord's on its body. */
export function withErrbacks(sig: Signature, errbacks: readonly Signature[]): Signature {
  const kwargs = kwargsOf(sig)
  switch (canvasKind(sig)) {
    case 'plain':
      return { ...sig, options: { ...sig.options, link_error: [...signatureList((sig.options ?? {}).link_error), ...errbacks] } }
    case 'chain':
    case 'group':
      return { ...sig, kwargs: { ...kwargs, tasks: tasksOf(sig).map((task) => withErrbacks(task, errbacks)) } }
    case 'chord': {
      const body = kwargs.body as Signature | undefined
      return body ? { ...sig, kwargs: { ...kwargs, body: withErrbacks(body, errbacks) } } : sig
    }
  }
}

/**
 * A chain's steps with the chain's own `link` and `link_error`
 * (`chain.link(sig)`, `chain.on_error(sig)`) placed as Celery's chain.run
 * places them: the callbacks on its last step, the errbacks on every step.
 */
export function chainStepsWithOptions(sig: Signature): Signature[] {
  const steps = tasksOf(sig)
  const options = (sig.options ?? {}) as Record<string, unknown>
  const links = signatureList(options.link)
  const errbacks = signatureList(options.link_error)
  if (!links.length && !errbacks.length) return steps
  return steps.map((step, index) => {
    let out = errbacks.length ? withErrbacks(step, errbacks) : step
    if (links.length && index === steps.length - 1)
      out = withResultTask(out, (o) => ({ ...o, link: [...signatureList(o.link), ...links] })) ?? {
        ...out,
        options: { ...out.options, link: [...signatureList(out.options?.link), ...links] },
      }
    return out
  })
}

/**
 * A group as Celery's `Task.replace` sends it in a task's place
 * (`sig |= accumulate.s(index=0)`): a chord whose body, celery.accumulate,
 * gives the list of the group's results.
 */
export function accumulatingChord(group: Signature): Signature {
  const accumulate: Signature = {
    task: 'celery.accumulate',
    args: [],
    kwargs: { index: 0 },
    options: {},
    subtask_type: null,
    immutable: false,
  }
  return {
    task: 'celery.chord',
    args: [],
    kwargs: { header: group, body: accumulate, kwargs: {} },
    options: {},
    subtask_type: 'chord',
    immutable: false,
  }
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
  const kwargs = kwargsOf(sig)
  switch (canvasKind(sig)) {
    case 'group': {
      const groupId = typeof options.task_id === 'string' ? options.task_id : randomUUID()
      const members: string[] = []
      const tasks = tasksOf(sig).map((member) => {
        const frozen = frozenStep(member)
        if (frozen.result?.kind === 'task') members.push(frozen.result.id)
        else if (frozen.result?.kind === 'group') members.push(...frozen.result.members)
        return frozen.signature
      })
      return {
        signature: { ...sig, kwargs: { ...kwargs, tasks }, options: { ...options, task_id: groupId } },
        result: { kind: 'group', id: groupId, members },
      }
    }
    case 'chain': {
      const tasks = tasksOf(sig)
      const last = tasks.at(-1)
      if (!last) return { signature: sig, result: undefined }
      const frozen = frozenStep(last)
      return { signature: { ...sig, kwargs: { ...kwargs, tasks: [...tasks.slice(0, -1), frozen.signature] } }, result: frozen.result }
    }
    case 'chord': {
      const body = chordBody(sig)
      if (!body) return { signature: sig, result: undefined }
      const frozen = frozenStep(body)
      return { signature: { ...sig, kwargs: { ...kwargs, body: frozen.signature } }, result: frozen.result }
    }
    default: {
      const id = typeof options.task_id === 'string' ? options.task_id : uuid4()
      return { signature: { ...sig, options: { ...options, task_id: id } }, result: { kind: 'task', id } }
    }
  }
}
