// Limits on an event body, checked on its text before it is parsed: Celery's
// events are flat (args and kwargs travel as repr strings), so a body that
// nests deeply or runs to megabytes is not an event a worker sent, and every
// monitor below (the dashboard's state, its pages, `events --dump`) would
// recurse into it.
import { MalformedMessageError } from '../errors.js'

/** Brackets deep an event body may nest: a batch (a list) of events whose fields hold a few levels each. */
export const MAX_EVENT_DEPTH = 32
/** Characters an event body (one event or a `task.multi` batch) may hold. */
export const MAX_EVENT_BODY = 4 * 1024 * 1024

export class EventLimitError extends MalformedMessageError {}

/**
 * Throws EventLimitError when the JSON text is longer than `maxLength` or
 * its arrays and objects nest deeper than `maxDepth`. One pass over the text,
 * no recursion; brackets inside strings are skipped.
 */
export function checkEventText(text: string, maxDepth = MAX_EVENT_DEPTH, maxLength = MAX_EVENT_BODY): void {
  if (text.length > maxLength) throw new EventLimitError(`event body refused: ${text.length} characters, over the limit of ${maxLength}`)
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) throw new EventLimitError(`event body refused: nests deeper than ${maxDepth} levels`)
    } else if (c === 0x5d || c === 0x7d) depth--
  }
}

/** Values an event (its fields and everything inside them) may hold. */
export const MAX_EVENT_VALUES = 100_000

/**
 * The same limits on an event already parsed (one handed over in-process, or
 * by a decoder that did not go through checkEventText): a walk with its own
 * stack, never recursion, that stops at the first value over a limit.
 */
export function checkEventValue(event: unknown, maxDepth = MAX_EVENT_DEPTH, maxValues = MAX_EVENT_VALUES): void {
  if (event === null || typeof event !== 'object') return
  const tooMany = (): EventLimitError => new EventLimitError(`event refused: more than ${maxValues} values`)
  // The event's own fields without allocating: most events are flat and stop here.
  let pending: unknown[] | null = null
  let seen = 1
  for (const key in event) {
    const item = (event as Record<string, unknown>)[key]
    if (++seen > maxValues) throw tooMany()
    if (item !== null && typeof item === 'object') {
      pending ??= []
      pending.push(item)
    }
  }
  if (!pending) return
  const depths = pending.map(() => 2)
  while (pending.length) {
    const value = pending.pop()!
    const depth = depths.pop()!
    if (depth > maxDepth) throw new EventLimitError(`event refused: nests deeper than ${maxDepth} levels`)
    for (const item of Array.isArray(value) ? value : Object.values(value as object)) {
      if (++seen > maxValues) throw tooMany()
      if (item !== null && typeof item === 'object') {
        pending.push(item)
        depths.push(depth + 1)
      }
    }
  }
}
