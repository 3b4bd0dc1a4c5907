// Integers at every width edge and past 2**53, for the interop tests that
// carry them through a result backend both ways with Python: the values, the
// JSON a Python client sends them as, and how each side shows what it read.

export const BOUNDARY_INTS: readonly bigint[] = [
  0n,
  1n,
  -1n,
  2n ** 7n - 1n,
  2n ** 8n,
  2n ** 15n,
  2n ** 16n,
  2n ** 31n - 1n,
  2n ** 31n,
  2n ** 32n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  2n ** 63n - 1n,
  2n ** 63n,
  2n ** 64n - 1n,
  2n ** 64n,
  2n ** 70n,
  18446744073709551617n,
  10n ** 40n,
  -(2n ** 31n),
  -(2n ** 31n) - 1n,
  -(2n ** 53n) - 1n,
  -(2n ** 63n),
  -(2n ** 63n) - 1n,
  -(2n ** 64n),
  -(2n ** 70n),
  -(10n ** 40n),
]

/** What msgpack can carry (Python's packb refuses the rest): int64 and uint64. */
export const MSGPACK_INTS = BOUNDARY_INTS.filter((v) => v >= -(2n ** 63n) && v < 2n ** 64n)

/** The list as JSON text (Python's json.loads reads every one as an int, exact). */
export const intsJson = (values: readonly bigint[] = BOUNDARY_INTS): string => `[${values.join(', ')}]`

/** As worker_client.py's int_shapes prints an all-int list: [type name, digits]. */
export const asPythonInts = (values: readonly bigint[] = BOUNDARY_INTS): string[][] => values.map((v) => ['int', v.toString()])

/** The values as a JS client holds them: numbers while safe, BigInts past 2**53. */
export const asJsInts = (values: readonly bigint[] = BOUNDARY_INTS): Array<number | bigint> =>
  values.map((v) => (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v))

/** What tsq read, as digits: a number must be an integer (and one a double holds exactly), a BigInt is one. */
export function jsDigits(value: unknown): string[] {
  if (!Array.isArray(value)) return [`not a list: ${String(value)}`]
  return value.map((v) =>
    typeof v === 'bigint' ? v.toString() : typeof v === 'number' && Number.isInteger(v) ? BigInt(v).toString() : `${typeof v} ${String(v)}`,
  )
}

/** `tsq result`'s line for the list: Python's repr of it. */
export const pythonRepr = (values: readonly bigint[] = BOUNDARY_INTS): string => `[${values.join(', ')}]`
