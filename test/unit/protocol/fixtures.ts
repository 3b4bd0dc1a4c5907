// Loads captured/generated wire fixtures and revives their tagged values.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { PyFloat, PyTuple } from '../../../src/protocol/index.js'

const dir = fileURLToPath(new URL('../../fixtures/wire/', import.meta.url))

export function loadFixture<T>(name: string): T {
  return JSON.parse(readFileSync(dir + name, 'utf8')) as T
}

/** {"$f": "2.0"} float, {"$t": [...]} tuple, {"$dt": [y, mo, d, h, mi, s, us]} UTC datetime. */
export function revive(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(revive)
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>
    if ('$f' in o) return new PyFloat(Number((o.$f as string).replace('inf', 'Infinity').replace('nan', 'NaN')))
    if ('$t' in o) return new PyTuple((o.$t as unknown[]).map(revive))
    if ('$dt' in o) {
      const [y, mo, d, h, mi, s, us] = o.$dt as number[]
      return new Date(Date.UTC(y!, mo! - 1, d, h, mi, s, us! / 1000))
    }
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, revive(x)]))
  }
  return v
}
