import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  MalformedMessageError,
  UnsupportedContentTypeError,
  decodeTaskMessage,
  dumps,
  encodeTaskV2,
  loads,
  parseIsoDate,
  type TaskSendOptions,
} from '../../../src/protocol/index.js'
import { loadFixture } from './fixtures.js'

interface Case {
  name: string
  task: string
  now: string
  ts_options: Record<string, unknown>
  headers_json: string
  properties: { correlation_id: string; reply_to: string }
  body: string
}
const { cases } = loadFixture<{ cases: Case[] }>('task-messages.json')

describe('spec §1 encodeTaskV2 against Celery 5.2.6 as_task_v2 output', () => {
  for (const c of cases) {
    it(c.name, () => {
      const opts = { ...c.ts_options, now: new Date(c.now) } as unknown as TaskSendOptions
      const m = encodeTaskV2(c.task, opts)
      assert.equal(dumps(m.headers), c.headers_json)
      assert.equal(m.body, c.body)
      assert.equal(m.properties.correlationId, c.properties.correlation_id)
      assert.equal(m.properties.replyTo, c.properties.reply_to)
      assert.equal(m.properties.deliveryMode, 2)
      assert.equal(m.contentType, 'application/json')
      assert.equal(m.contentEncoding, 'utf-8')
    })
  }
  it('spec §1.1: expiration is integer ms, priority passes through, past expiry clamps to "0"', () => {
    const now = new Date('2026-11-22T05:24:18.153Z')
    const m = encodeTaskV2('tasks.add', { origin: 'gen1@h', expires: 60, priority: 5, now })
    assert.equal(m.properties.expiration, '60000')
    assert.equal(m.properties.priority, 5)
    assert.equal(encodeTaskV2('t', { origin: 'o', expires: new Date(now.getTime() - 5000), now }).properties.expiration, '0')
    assert.equal(encodeTaskV2('t', { origin: 'o', expires: '2026-11-22T05:24:20.153000+00:00', now }).properties.expiration, '2000')
    assert.equal(encodeTaskV2('t', { origin: 'o', now }).properties.expiration, undefined)
  })
  it('generates a uuid4 id, root_id defaults to it, extra headers are appended', () => {
    const m = encodeTaskV2('t', { origin: 'o', headers: { custom: 1, retries: 2 } })
    assert.match(m.headers.id as string, /^[0-9a-f-]{36}$/)
    assert.equal(m.headers.root_id, m.headers.id)
    assert.deepEqual(Object.keys(m.headers).slice(-2), ['ignore_result', 'custom'])
    assert.equal(m.headers.retries, 2)
  })
})

describe('spec §1.6 decodeTaskMessage', () => {
  it('decodes the captured Redis envelope (§1.9), body as bytes', () => {
    const { envelope } = loadFixture<{ envelope: string }>('spec-1.9-redis-task-envelope.json')
    const env = loads(envelope) as { body: string; headers: Record<string, unknown>; 'content-type': string; 'content-encoding': string }
    const req = decodeTaskMessage({
      headers: env.headers,
      body: Buffer.from(env.body, 'base64'),
      contentType: env['content-type'],
      contentEncoding: env['content-encoding'],
    })
    assert.equal(req.protocol, 2)
    assert.equal(req.id, '890ef490-86e7-4d33-a5a9-b85b58e8c844')
    assert.equal(req.task, 'tasks.add')
    assert.deepEqual(req.args, [2, 3])
    assert.deepEqual(req.kwargs, {})
    assert.deepEqual(req.embed, { callbacks: null, errbacks: null, chain: null, chord: null })
    assert.deepEqual(req.timelimit, [null, null])
    assert.equal(req.rootId, req.id)
    assert.equal(req.argsrepr, '(2, 3)')
    assert.equal(req.origin, 'gen8434@vm')
    assert.equal(req.ignoreResult, false)
  })
  it('decodes the captured v1 body (§1.8): taskset → group, argsrepr built as Celery does', () => {
    const f = loadFixture<{ headers: Record<string, unknown>; body: string }>('spec-1.8-v1-body.json')
    const req = decodeTaskMessage({ headers: f.headers, body: f.body, contentType: 'application/json', contentEncoding: 'utf-8' })
    assert.equal(req.protocol, 1)
    assert.equal(req.id, 'eeeeeeee-0000-0000-0000-000000000001')
    assert.equal(req.eta, '2026-11-22T05:28:40.665797+00:00')
    assert.deepEqual(req.args, [2, 3])
    assert.equal(req.argsrepr, '[2, 3]')
    assert.equal(req.rootId, null)
  })
  it('decodes a hybrid message: v2 headers over a dict body with args', () => {
    const req = decodeTaskMessage({
      headers: { task: 'tasks.add', id: 'h1', root_id: 'r' },
      body: '{"args": [1], "kwargs": {"a": 2}, "callbacks": [{"task": "cb", "args": [], "kwargs": {}, "options": {}, "subtask_type": null, "immutable": false}]}',
      contentType: 'application/json',
    })
    assert.equal(req.task, 'tasks.add')
    assert.deepEqual(req.args, [1])
    assert.equal(req.rootId, 'r')
    assert.equal(req.embed.callbacks?.[0]?.task, 'cb')
  })
  it('round-trips every encoded fixture', () => {
    for (const c of cases) {
      const m = encodeTaskV2(c.task, { ...c.ts_options, now: new Date(c.now) } as unknown as TaskSendOptions)
      const req = decodeTaskMessage({
        headers: m.headers,
        body: new TextEncoder().encode(m.body),
        contentType: m.contentType,
        contentEncoding: m.contentEncoding,
      })
      assert.equal(req.id, m.headers.id)
      assert.deepEqual(req.args, loads(m.body) instanceof Array ? (loads(m.body) as unknown[])[0] : undefined)
      assert.equal(req.eta, m.headers.eta)
      assert.equal(req.expires, m.headers.expires)
      assert.deepEqual(req.timelimit, m.headers.timelimit)
    }
  })
  const base = { headers: { task: 't', id: 'i' }, contentType: 'application/json' }
  const rejects: Array<[string, Parameters<typeof decodeTaskMessage>[0]]> = [
    ['bad JSON', { ...base, body: '[[1], {}' }],
    ['body not a list', { ...base, body: '"x"' }],
    ['args not a list', { ...base, body: '[1, {}, null]' }],
    ['kwargs not a mapping', { ...base, body: '[[], [], null]' }],
    ['missing id', { ...base, headers: { task: 't' }, body: '[[], {}, null]' }],
    ['task not a string', { ...base, headers: { task: 5, id: 'i' }, body: '[[], {}, null]' }],
    ['invalid eta', { ...base, headers: { task: 't', id: 'i', eta: 'tomorrow' }, body: '[[], {}, null]' }],
    ['invalid expires', { ...base, headers: { task: 't', id: 'i', expires: '2024-13-01T00:00:00' }, body: '[[], {}, null]' }],
    ['bad timelimit', { ...base, headers: { task: 't', id: 'i', timelimit: 'x' }, body: '[[], {}, null]' }],
    ['neither v1 nor v2', { headers: {}, body: '[[], {}, null]', contentType: 'application/json' }],
    ['invalid utf-8', { ...base, body: new Uint8Array([0x5b, 0xff, 0x5d]) }],
  ]
  for (const [what, input] of rejects) {
    it(`rejects ${what} with MalformedMessageError`, () => assert.throws(() => decodeTaskMessage(input), MalformedMessageError))
  }
  it('rejects pickle with UnsupportedContentTypeError, even when accept_content lists it', () => {
    for (const accept of [undefined, new Set(['application/x-python-serialize'])]) {
      assert.throws(
        () =>
          decodeTaskMessage({
            ...base,
            body: 'x',
            contentType: 'application/x-python-serialize',
            contentEncoding: 'binary',
            ...(accept ? { decoder: { accept } } : {}),
          }),
        (e: unknown) =>
          e instanceof UnsupportedContentTypeError &&
          e.code === 'PICKLE_REFUSED' &&
          e instanceof MalformedMessageError &&
          /never unpickles/.test(e.message),
      )
    }
  })
})

describe('parseIsoDate (celery.utils.iso8601)', () => {
  it('reads offsets, Z, naive-as-UTC and fractions', () => {
    assert.equal(parseIsoDate('2026-11-22T05:24:28.153844+00:00').toISOString(), '2026-11-22T05:24:28.153Z')
    assert.equal(parseIsoDate('2024-01-02T03:04:05Z').toISOString(), '2024-01-02T03:04:05.000Z')
    assert.equal(parseIsoDate('2024-01-02T03:04:05').toISOString(), '2024-01-02T03:04:05.000Z')
    assert.equal(parseIsoDate('2024-01-02T03:04:05.57+01:30').toISOString(), '2024-01-02T01:34:05.570Z')
    assert.equal(parseIsoDate('2024-01-02').toISOString(), '2024-01-02T00:00:00.000Z')
  })
  it('throws on what Python refuses', () => {
    for (const bad of ['', 'x', '2024', '2024-02-30T00:00:00', '2024-01-01T25:00:00'])
      assert.throws(() => parseIsoDate(bad), RangeError, bad)
  })
})
