// tsq's AMQP field-table codec against py-amqp's own bytes (fixture made by
// test/fixtures/wire/generators/amqp_field_tables.py): what Python writes, tsq
// reads as Python does; what tsq writes is byte for byte what Python writes.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { decodeFields, encodeTable, unreadableReason } from '../../../src/transport/amqp/field-table.js'
import '../../../src/transport/amqp/amqplib.js'

interface Case {
  name: string
  written: string
  read: unknown
}
const fixture = JSON.parse(readFileSync(new URL('../../fixtures/wire/amqp-field-tables.json', import.meta.url), 'utf8')) as {
  cases: Case[]
}
const byName = new Map(fixture.cases.map((c) => [c.name, c]))

/** The fixture's tagged JSON as tsq's decoder gives it: integers exact (number where safe, else bigint). */
function untag(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v
  if (Array.isArray(v)) return v.map(untag)
  const o = v as Record<string, unknown>
  if (typeof o.$int === 'string') {
    const n = BigInt(o.$int)
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n
  }
  if (typeof o.$f === 'string') return Number(o.$f)
  if (typeof o.$b === 'string') return Buffer.from(o.$b, 'hex').toString('utf8')
  if (typeof o.$ts === 'number') return o.$ts
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, untag(x)]))
}

function plain(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return v.toString('utf8')
  if (Array.isArray(v)) return v.map(plain)
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
  return v
}

function encode(table: Record<string, unknown>): Buffer {
  const buffer = Buffer.alloc(65536)
  const size = encodeTable(buffer, table, 0)
  return buffer.subarray(4, size)
}

describe('[amqp field table] reading what py-amqp writes', () => {
  for (const c of fixture.cases) {
    it(`reads py-amqp's ${c.name} table as py-amqp does`, () => {
      const decoded = decodeFields(Buffer.from(c.written, 'hex'))
      assert.equal(unreadableReason(decoded), undefined)
      // Python's float 2.0 is JS's 2; its Decimal('-3.14') is -3.14.
      assert.deepEqual(plain(decoded), untag(c.read))
    })
  }
})

describe('[amqp field table] writing as py-amqp writes', () => {
  // Every case whose values JavaScript holds as Python does (not bytes, Decimal, datetime, or 2.0).
  for (const name of ['integers', 'celery-headers', 'strings', 'booleans-null', 'nested']) {
    it(`writes the ${name} table byte for byte as py-amqp`, () => {
      const c = byName.get(name)!
      const values = untag(c.read) as Record<string, unknown>
      assert.equal(encode(values).toString('hex'), c.written)
    })
  }

  it('writes each boundary integer as I within ±(2**31-1) and L beyond, never b or s', () => {
    const tags = (n: number | bigint) => String.fromCharCode(encode({ k: n })[2]!)
    for (const n of [0, 127, 128, 255, 256, 32767, 32768, -1, -128, -129, -32769, 2 ** 31 - 1, -(2 ** 31) + 1])
      assert.equal(tags(n), 'I', String(n))
    for (const n of [2 ** 31, -(2 ** 31), 2 ** 40, 2 ** 53 - 1, -(2 ** 53) + 1, 2n ** 63n - 1n, -(2n ** 63n)])
      assert.equal(tags(n), 'L', String(n))
    assert.equal(tags(1.5), 'd')
    assert.equal(tags(2 ** 64), 'd')
  })

  it('round-trips 64-bit integers exactly, and amqplib typed values as py-amqp types them', () => {
    const table = {
      big: 2n ** 63n - 1n,
      neg: -(2n ** 62n) - 3n,
      i: { '!': 'int', value: 300 },
      s: { '!': 'short', value: 300 },
      ts: { '!': 'timestamp', value: 1700000000 },
      d: { '!': 'decimal', value: { places: 2, digits: -314 } },
      when: new Date(1_700_000_000_500),
    }
    const decoded = decodeFields(encode(table))
    assert.deepEqual(decoded, { big: 2n ** 63n - 1n, neg: -(2n ** 62n) - 3n, i: 300, s: 300, ts: 1700000000, d: -3.14, when: 1700000000 })
    assert.equal(encode({ s: { '!': 'short', value: 300 } })[2], 0x49)
  })
})

describe('[amqp field table] tags other clients write', () => {
  it("reads amqplib's and RabbitMQ's narrow and signed 64-bit tags (b s l) and the unsigned ones", () => {
    const bytes = Buffer.concat([
      Buffer.from([1, 0x61, 0x62, 0xff]), // a: b -1
      Buffer.from([1, 0x62, 0x73, 0x01, 0x2c]), // b: s 300
      Buffer.from([1, 0x63, 0x6c, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfb]), // c: l -5
      Buffer.from([1, 0x64, 0x42, 0xff]), // d: B 255
      Buffer.from([1, 0x65, 0x75, 0xff, 0xff]), // e: u 65535
      Buffer.from([1, 0x66, 0x69, 0xff, 0xff, 0xff, 0xff]), // f: i 4294967295
      Buffer.from([1, 0x67, 0x55, 0xff, 0xfe]), // g: U -2
    ])
    assert.deepEqual(decodeFields(bytes), { a: -1, b: 300, c: -5, d: 255, e: 65535, f: 4294967295, g: -2 })
  })

  it('gives an unreadable table back empty with its reason, instead of throwing', () => {
    const bad = Buffer.concat([Buffer.from([1, 0x61, 0x49, 0, 0, 0, 1]), Buffer.from([1, 0x62, 0x51, 1, 2, 3])]) // b: tag 'Q'
    const decoded = decodeFields(bad)
    assert.deepEqual(Object.keys(decoded), [])
    assert.match(unreadableReason(decoded) ?? '', /unknown field type tag "Q"/)
    const truncated = Buffer.from([1, 0x61, 0x53, 0, 0, 0, 9, 0x61])
    assert.match(unreadableReason(decodeFields(truncated)) ?? '', /ends inside a value/)
  })
})

describe('[amqp field table] short strings copied without write()', () => {
  it('writes names and values of every length around the cut-over, ASCII or not, as Buffer#write does', () => {
    for (const n of [0, 1, 23, 24, 25, 40]) {
      for (const text of ['a'.repeat(n), `${'b'.repeat(Math.max(0, n - 1))}é`, `${'c'.repeat(Math.max(0, n - 2))}😀`]) {
        const key = text.slice(0, 200) || 'k'
        const bytes = encode({ [key]: text })
        const name = Buffer.from(key, 'utf8')
        const value = Buffer.from(text, 'utf8')
        const expected = Buffer.concat([Buffer.from([name.length]), name, Buffer.from([0x53]), Buffer.alloc(4), value])
        expected.writeUInt32BE(value.length, 1 + name.length + 1)
        assert.deepEqual(bytes, expected)
        assert.deepEqual(decodeFields(bytes), { [key]: text })
      }
    }
  })

  it('still refuses a string that does not fit the buffer, ASCII or not', () => {
    for (const text of ['x'.repeat(20), 'é'.repeat(10)]) {
      assert.throws(() => encodeTable(Buffer.alloc(16), { k: text }, 0), RangeError)
    }
  })
})
