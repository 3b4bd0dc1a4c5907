// A chord's header as Celery freezes it before sending (`_freeze_group_tasks`)
// and counts it (`_chord._descend`), and the two typed reads of a signature's
// options the worker's canvas code shares. Pure: nothing is sent here.
import { randomUUID } from 'node:crypto'
import { canvasKind, chordBody, tasksOf, unrollHeader, type ResultNode, type Signature } from '../../protocol/index.js'

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
export function freezeHeaderMember(
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

export function optionString(sig: Signature, key: string): string | undefined {
  const v = (sig.options as Record<string, unknown> | undefined)?.[key]
  return typeof v === 'string' ? v : undefined
}

export function optionNumber(sig: Signature, key: string): number | undefined {
  const v = (sig.options as Record<string, unknown> | undefined)?.[key]
  return typeof v === 'number' ? v : undefined
}
