// Python value shapes that JavaScript cannot tell apart on its own: a float
// with an integral value (2.0) and a tuple. Encoders honour them; decoders
// produce plain numbers and arrays unless asked otherwise.

/** A number that Python must see as a float: `2` prints as `2.0`. */
export class PyFloat {
  constructor(readonly value: number) {}
  toJSON(): number {
    return this.value
  }
  /** Arithmetic and Number() see the number: a whole-second timestamp read as 2.0 is still a time. */
  valueOf(): number {
    return this.value
  }
}

/** A Python tuple: repr'd with parentheses, `(1,)` for one item; JSON writes it as a list. */
export class PyTuple {
  constructor(readonly items: unknown[]) {}
  toJSON(): unknown[] {
    return this.items
  }
}

/**
 * Python's `repr(float)`: the shortest round-trip digits (which JavaScript
 * also computes), laid out as Python does: fixed notation for decimal
 * exponents -4..15, else `1e+16` style with at least two exponent digits,
 * and always a `.0` on integral values.
 */
export function formatPyFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan'
  if (x === Infinity) return 'inf'
  if (x === -Infinity) return '-inf'
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0'
  const sign = x < 0 ? '-' : ''
  // toExponential() without a digit count yields the shortest unique digits.
  const [mantissa, expText] = Math.abs(x).toExponential().split('e') as [string, string]
  const digits = mantissa.replace('.', '')
  const exp = Number(expText)
  if (exp < -4 || exp >= 16) {
    const frac = digits.length > 1 ? `.${digits.slice(1)}` : ''
    const expAbs = String(Math.abs(exp)).padStart(2, '0')
    return `${sign}${digits[0]}${frac}e${exp < 0 ? '-' : '+'}${expAbs}`
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`
  const intLen = exp + 1
  if (digits.length <= intLen) return `${sign}${digits}${'0'.repeat(intLen - digits.length)}.0`
  return `${sign}${digits.slice(0, intLen)}.${digits.slice(intLen)}`
}

/**
 * How Python prints a JS number: integral values as ints (exact, even past
 * 2^53 where String() would switch to exponent form), others as floats.
 */
export function formatPyNumber(x: number): string {
  // String() writes a safe integer (and -0, as '0') as Python's int does, without a BigInt per number.
  if (Number.isSafeInteger(x)) return String(x)
  if (Number.isInteger(x)) return Object.is(x, -0) ? '0' : BigInt(x).toString()
  return formatPyFloat(x)
}

/**
 * Python's order for `str` (what `sorted()` gives): by code point. For the
 * lists tsq prints sorted (nodes, schedule entries) this is also what keeps
 * String#localeCompare out: its first call builds ICU's collator (16 ms in a
 * bare node). JavaScript's `<` compares UTF-16 code units, which puts astral
 * characters (surrogates, D800-DFFF) below U+E000-FFFF; the shift below puts
 * them above, as their code points are (ICU's u_strCompareCodePointOrder).
 */
export function comparePyStr(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointRank(x) - codePointRank(y)
  }
  return a.length - b.length
}

function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000
}
