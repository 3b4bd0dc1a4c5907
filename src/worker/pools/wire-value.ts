// A prefork child or a worker thread hands its task's result to the worker by
// structured clone, which keeps an object's own fields and drops its
// prototype. kombu's JSON, which the solo pool's worker applies to the value
// itself, calls an object's toJSON() first: a Mongoose document, a Luxon
// DateTime or a Decimal is stored as what its toJSON() gives. So the slot
// calls toJSON() before handing a value over, and every pool stores the same.

/** `value` with every toJSON() it holds applied (Dates kept: the clone keeps them), the same object when it holds none. */
export function withToJSONApplied(value: unknown): unknown {
  return apply(value, new Set())
}

function apply(value: unknown, seen: Set<object>): unknown {
  if (value === null || typeof value !== 'object') return value
  if (value instanceof Date || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value
  // A cycle is left as it is, for the encoder to refuse as it refuses any.
  if (seen.has(value)) return value
  const toJSON = (value as { toJSON?: unknown }).toJSON
  if (typeof toJSON === 'function') {
    const json = (toJSON as () => unknown).call(value)
    if (json !== value) return apply(json, seen)
  }
  seen.add(value)
  try {
    if (Array.isArray(value)) return applyToList(value, seen)
    if (value instanceof Set) {
      const items = [...value]
      const applied = applyToList(items, seen)
      return applied === items ? value : new Set(applied)
    }
    if (value instanceof Map) {
      let copy: Map<unknown, unknown> | undefined
      for (const [k, v] of value) {
        const applied = apply(v, seen)
        if (applied !== v) (copy ??= new Map(value)).set(k, applied)
      }
      return copy ?? value
    }
    let copy: Record<string, unknown> | undefined
    for (const [k, v] of Object.entries(value)) {
      const applied = apply(v, seen)
      if (applied !== v) (copy ??= { ...value })[k] = applied
    }
    return copy ?? value
  } finally {
    seen.delete(value)
  }
}

function applyToList(items: unknown[], seen: Set<object>): unknown[] {
  let copy: unknown[] | undefined
  for (let i = 0; i < items.length; i++) {
    const applied = apply(items[i], seen)
    if (applied !== items[i]) (copy ??= items.slice())[i] = applied
  }
  return copy ?? items
}
