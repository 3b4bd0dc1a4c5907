// A flag's value read as click reads it for Celery, with click's sentence when
// it is not one: the oclif flag types (oclif-flags.ts) and the commands that
// read a value themselves share these. No oclif here.
import { pyRepr } from '../../protocol/index.js'
import { InvalidValueError } from '../errors.js'

// A type, not an interface: oclif's custom flag options need an index signature.
export type NumberRange = {
  min?: number
  max?: number
  /** The minimum itself is out (click's min_open): seconds that must be above 0. */
  minOpen?: boolean
}

/** Python's repr of a string, as click quotes the value it refuses. */
const quoted = (value: string): string => pyRepr(value)

/** click's `_describe_range`: x>=1, x>0, 0<=x<=255. */
function describeRange({ min, max, minOpen }: NumberRange): string {
  const low = min === undefined ? '' : `${min}${minOpen ? '<' : '<='}`
  const high = max === undefined ? '' : `<=${max}`
  if (min !== undefined && max === undefined) return `x${minOpen ? '>' : '>='}${min}`
  return `${low}x${high}`
}

function inRange(n: number, label: string, input: string, range: NumberRange): number {
  const { min, max, minOpen } = range
  const below = min !== undefined && (minOpen ? n <= min : n < min)
  if (below || (max !== undefined && n > max))
    throw new InvalidValueError(label, `${input.trim()} is not in the range ${describeRange(range)}.`)
  return n
}

/** click.INT (with IntRange's bounds). */
export function integerValue(label: string, input: string, range: NumberRange = {}): number {
  if (!/^\s*[-+]?\d+\s*$/.test(input)) throw new InvalidValueError(label, `${quoted(input)} is not a valid integer.`)
  return inRange(Number.parseInt(input, 10), label, input, range)
}

/** click.FLOAT (with FloatRange's bounds): seconds, mostly. */
export function floatValue(label: string, input: string, range: NumberRange = {}): number {
  const n = input.trim() === '' ? Number.NaN : Number(input)
  if (!Number.isFinite(n)) throw new InvalidValueError(label, `${quoted(input)} is not a valid float.`)
  return inRange(n, label, input, range)
}

/** click.Choice. */
export function choiceValue(label: string, input: string, choices: readonly string[]): string {
  if (choices.includes(input)) return input
  throw new InvalidValueError(
    label,
    `${quoted(input)} is not ${choices.length === 1 ? quoted(choices[0]!) : `one of ${choices.map(quoted).join(', ')}`}.`,
  )
}
