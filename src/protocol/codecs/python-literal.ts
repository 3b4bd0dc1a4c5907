// Reading back what Python's repr wrote, where an event carries it: a task's
// kwargs come as `{'x': 1, 'y': 'z'}` (kwargsrepr), and Flower's
// `kwargs:key=value` search reads them with ast.literal_eval. This reads only
// the flat dicts tasks have; anything else is refused (null), never evaluated.
// One pass over the text, each item matched where the last one ended: linear
// in its length, whatever a sender put in it.

/** One `key: value,` of the dict: a quoted key, then a quoted string, a number, None, True or False. */
const ITEM =
  /\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*:\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|-?[\d.eE+-]+|None|True|False)\s*(?:,|$)/y

/**
 * The items of a flat dict's repr, each as [key, value] text: strings without
 * their quotes (escapes left as written), numbers, None, True and False as
 * written. Null for what is not a string holding such a dict (a nested value,
 * a list, a dict with anything else in it); [] for `{}`.
 */
export function readFlatDictRepr(text: unknown): [string, string][] | null {
  if (typeof text !== 'string') return null
  const body = text.trim()
  if (!body.startsWith('{') || !body.endsWith('}')) return null
  const inner = body.slice(1, -1)
  const items: [string, string][] = []
  const item = new RegExp(ITEM)
  while (item.lastIndex < inner.length) {
    const m = item.exec(inner)
    if (!m) return null
    const value = m[3]!
    items.push([m[1] ?? m[2] ?? '', /^['"]/.test(value) ? value.slice(1, -1) : value])
  }
  return items
}
