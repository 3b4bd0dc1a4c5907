// Depth and size limits of decoded messages: JSON, YAML and msgpack bodies and
// header tables nested past the limit are refused with MessageLimitError
// before anything recurses over them, at the limit they decode, and brackets
// inside strings do not count.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { encode as msgpackEncode } from '@msgpack/msgpack'
import {
  DEFAULT_MAX_DEPTH,
  MessageLimitError,
  YAML_MAX_DEPTH,
  decodeTaskMessage,
  deserialize,
  jsonDepthExceeds,
  loads,
  valueLimitExceeded,
  yamlDepthBound,
} from '../../../src/protocol/index.js'

const ALL = new Set(['application/json', 'application/x-msgpack', 'application/x-yaml'])
const nestedJson = (d: number): string => `${'['.repeat(d)}${']'.repeat(d)}`
function nestedValue(d: number): unknown {
  let v: unknown = []
  for (let i = 1; i < d; i++) v = [v]
  return v
}
const HEADERS = {
  lang: 'py',
  task: 'proj.add',
  id: 'a-1',
  root_id: 'a-1',
  retries: 0,
  timelimit: [null, null],
  argsrepr: '()',
  kwargsrepr: '{}',
}
const EMBED = '{"callbacks": null, "errbacks": null, "chain": null, "chord": null}'

describe('JSON text depth', () => {
  it('counts brackets outside strings only', () => {
    assert.equal(jsonDepthExceeds(`["${'['.repeat(5000)}"]`, 10), false)
    assert.equal(jsonDepthExceeds(`["\\"${'['.repeat(50)}"]`, 10), false)
    assert.equal(jsonDepthExceeds(`{"a": ${nestedJson(11)}}`, 11), true)
    assert.equal(jsonDepthExceeds(`{"a": ${nestedJson(10)}}`, 11), false)
  })

  it('refuses a body past the limit and decodes one at it', () => {
    assert.throws(() => deserialize(nestedJson(DEFAULT_MAX_DEPTH + 1), 'application/json', 'utf-8', ALL), MessageLimitError)
    assert.throws(
      () => deserialize(nestedJson(100_000), 'application/json', 'utf-8', ALL),
      (e: unknown) => e instanceof MessageLimitError && /RecursionError\('maximum nesting depth 1000 exceeded/.test(e.pythonRepr),
    )
    assert.ok(Array.isArray(deserialize(nestedJson(DEFAULT_MAX_DEPTH), 'application/json', 'utf-8', ALL)))
  })

  it('takes the limits given', () => {
    assert.throws(
      () => deserialize(nestedJson(6), 'application/json', 'utf-8', ALL, 'body', { maxDepth: 5, maxBytes: 1000 }),
      MessageLimitError,
    )
    assert.throws(
      () => deserialize('[1, 2, 3]', 'application/json', 'utf-8', ALL, 'body', { maxDepth: 5, maxBytes: 4 }),
      /9 bytes exceeds the limit of 4 bytes/,
    )
  })

  it("the slow parser (Python's NaN, long integers) refuses deep text instead of overflowing", () => {
    assert.throws(() => loads(`[NaN, ${nestedJson(50_000)}]`), SyntaxError)
    assert.throws(() => loads(`[12345678901234567890, ${nestedJson(50_000)}]`, { integers: 'exact' }), SyntaxError)
  })
})

describe('YAML and msgpack depth', () => {
  it('refuses deep YAML before the library recurses (flow, block, compact)', () => {
    for (const text of [
      nestedJson(3000),
      nestedJson(100_000),
      Array.from({ length: 800 }, (_, i) => `${' '.repeat(i)}-`).join('\n'),
      `${'- '.repeat(5000)}x`,
    ]) {
      assert.throws(() => deserialize(text, 'application/x-yaml', 'utf-8', ALL), MessageLimitError)
    }
    assert.ok(Array.isArray(deserialize(nestedJson(YAML_MAX_DEPTH - 1), 'application/x-yaml', 'utf-8', ALL)))
    assert.deepEqual(deserialize('a: \'[[[[\'\nb: "{{{"\nc: [1, {d: 2}]  # [[[\n', 'application/x-yaml', 'utf-8', ALL), {
      a: '[[[[',
      b: '{{{',
      c: [1, { d: 2 }],
    })
  })

  it('bounds ordinary YAML from above, not far off', () => {
    const bound = yamlDepthBound('a: 1\nb:\n  - c\n  - d: [e, {f: g}]\n')
    assert.ok(bound >= 4 && bound <= 10, String(bound))
  })

  it('refuses deep msgpack after its (iterative) decoder and before anything walks it', () => {
    const deep = new Uint8Array(100_001).fill(0x91)
    deep[100_000] = 0xc0
    assert.throws(() => deserialize(deep, 'application/x-msgpack', 'binary', ALL), MessageLimitError)
    assert.ok(
      Array.isArray(
        deserialize(
          msgpackEncode(nestedValue(DEFAULT_MAX_DEPTH), { maxDepth: 2 * DEFAULT_MAX_DEPTH }),
          'application/x-msgpack',
          'binary',
          ALL,
        ),
      ),
    )
  })
})

describe('decoded values and task messages', () => {
  it('walks values without recursion, cycles and shared references included', () => {
    assert.equal(valueLimitExceeded(nestedValue(100_000), 1000), 'depth')
    const cyclic: unknown[] = []
    cyclic.push(cyclic)
    assert.equal(valueLimitExceeded(cyclic, 1000), 'depth')
    let shared: unknown = [1]
    for (let i = 0; i < 40; i++) shared = [shared, shared]
    assert.equal(valueLimitExceeded(shared, 1000, 1_000_000), 'size')
    assert.equal(valueLimitExceeded({ a: [1, { b: new Map([['c', new Set([1])]]) }] }, 5), null)
  })

  it('refuses a task whose headers nest too deep', () => {
    const headers = { ...HEADERS, custom: nestedValue(5000) }
    assert.throws(
      () => decodeTaskMessage({ headers, body: `[[], {}, ${EMBED}]`, contentType: 'application/json', contentEncoding: 'utf-8' }),
      MessageLimitError,
    )
  })

  it('refuses a task whose args, kwargs or embedded signatures nest too deep, and reads one at the limit', () => {
    const d = DEFAULT_MAX_DEPTH
    for (const body of [
      `[${nestedJson(d)}, {}, ${EMBED}]`,
      `[[], {"k": ${nestedJson(d)}}, ${EMBED}]`,
      `[[], {}, {"callbacks": [{"task": "x", "args": ${nestedJson(d)}}]}]`,
      `{"task": "proj.add", "id": "v1", "args": ${nestedJson(d)}}`,
    ]) {
      assert.throws(
        () =>
          decodeTaskMessage({
            headers: body.startsWith('{') ? {} : HEADERS,
            body,
            contentType: 'application/json',
            contentEncoding: 'utf-8',
          }),
        MessageLimitError,
      )
    }
    const ok = decodeTaskMessage({
      headers: HEADERS,
      body: `[${nestedJson(d - 1)}, {}, ${EMBED}]`,
      contentType: 'application/json',
      contentEncoding: 'utf-8',
    })
    assert.equal(ok.id, 'a-1')
  })
})

describe('the limits settings', () => {
  it('worker_message_max_depth lowers the depth, never raises it; worker_message_max_bytes sets the size', async () => {
    const { messageLimits, ImproperlyConfiguredError, taskDecoder } = await import('../../../src/config/security.js')
    assert.deepEqual(messageLimits({}), { maxDepth: DEFAULT_MAX_DEPTH, maxBytes: 64 * 1024 * 1024 })
    assert.deepEqual(messageLimits({ worker_message_max_depth: 50, worker_message_max_bytes: '4096' }), { maxDepth: 50, maxBytes: 4096 })
    for (const conf of [
      { worker_message_max_depth: DEFAULT_MAX_DEPTH + 1 },
      { worker_message_max_depth: 0 },
      { worker_message_max_bytes: 'lots' },
    ]) {
      assert.throws(() => messageLimits(conf), ImproperlyConfiguredError)
    }
    const decoder = taskDecoder({ worker_message_max_depth: 5 }, undefined)
    assert.throws(
      () =>
        decodeTaskMessage({
          headers: HEADERS,
          body: `[${nestedJson(5)}, {}, ${EMBED}]`,
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          decoder,
        }),
      /maximum nesting depth 5 exceeded/,
    )
  })
})
