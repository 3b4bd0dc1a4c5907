// Spec §2.3 on the worker side: a chord header task's end (success, failure,
// revoke; not a retry) is counted in the result backend, even with its result
// ignored, and the part that completes the chord sends the body with every
// result, or fails it with ChordError and runs its errbacks.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createApp } from '../../../src/app/app.js'
import type { ResultBackend } from '../../../src/app/backends/index.js'
import { Logger } from '../../../src/app/logger.js'
import { decodeResultMeta, decodeTaskMessage, encodeChordPart, encodeTaskV2, joinChordParts, type Signature } from '../../../src/protocol/index.js'
import type { Delivery, Transport } from '../../../src/transport/index.js'
import type { EventDispatcher } from '../../../src/worker/events.js'
import { LimitedSet } from '../../../src/worker/limited-set.js'
import { SoloPool } from '../../../src/worker/pools/solo-pool.js'
import { TaskRunner } from '../../../src/worker/task-runner.js'

class RecordingLogger extends Logger {
  readonly errors: string[] = []
  override log(level: Parameters<Logger['log']>[0], message: string): void {
    if (level === 'ERROR') this.errors.push(message)
  }
}

const GROUP = '11111111-2222-3333-4444-555555555555'
const BODY_ID = '99999999-8888-7777-6666-555555555555'

function bodySignature(extra: Record<string, unknown> = {}): Signature {
  return { task: 'proj.tsum', args: [], kwargs: {}, options: { task_id: BODY_ID, queue: 'q', ...extra }, subtask_type: null, immutable: false }
}

/** A backend that completes the chord when `size` parts have come, as Redis does. */
function chordBackend(size: number, withChords = true) {
  const parts: { index: number | null; part: string }[] = []
  const stored: { id: string; meta: string }[] = []
  const backend: ResultBackend = {
    displayUrl: 'fake://',
    get: async () => null,
    waitReady: async () => { throw new Error('not used') },
    store: async (id, meta) => { stored.push({ id, meta }) },
    close: async () => undefined,
  }
  if (withChords) {
    backend.chordPartReturn = async (gid, index, part) => {
      assert.equal(gid, GROUP)
      parts.push({ index, part })
      if (parts.length < size) return null
      return [...parts].sort((a, b) => (a.index ?? Infinity) - (b.index ?? Infinity)).map((p) => p.part)
    }
  }
  return { backend, parts, stored }
}

function setup(backend: ResultBackend) {
  const app = createApp({ name: 'proj' })
  app.task('proj.add', (x: number, y: number) => x + y)
  app.task('proj.fail', (message: string) => { throw new TypeError(message) })
  app.task('proj.quiet', (x: number) => x, { ignoreResult: true })
  const published: ReturnType<typeof decodeTaskMessage>[] = []
  const transport = {
    kind: 'redis',
    declareQueue: async () => undefined,
    declareExchange: async () => undefined,
    bindQueue: async () => undefined,
    publish: async (_exchange: string, _key: string, message: { body: Buffer; properties: Delivery['properties'] }) => {
      published.push(decodeTaskMessage({ body: message.body, contentType: 'application/json', contentEncoding: 'utf-8', headers: message.properties.headers ?? {} }))
    },
  } as unknown as Transport
  const log = new RecordingLogger('WARNING')
  const runner = new TaskRunner({
    app, transport, pool: new SoloPool(app, 4), backend, log, hostname: 'w@h', acksLate: true, timeLimit: null, softTimeLimit: null,
    events: { taskEvents: false, sendTask: () => undefined } as unknown as EventDispatcher,
    revoked: new LimitedSet(),
    onScheduledChange: () => undefined,
  })
  return { runner, published, log }
}

function headerTask(name: string, args: unknown[], index: number, body = bodySignature()): Delivery {
  const m = encodeTaskV2(name, { args, origin: 'gen@test', group: GROUP, groupIndex: index, embed: { chord: body } })
  return {
    body: Buffer.from(m.body),
    properties: { contentType: m.contentType, contentEncoding: m.contentEncoding, headers: m.headers as Delivery['properties']['headers'], deliveryMode: 2, priority: 0 },
    exchange: '', routingKey: 'q', queue: 'q', redelivered: false, deliveryTag: m.properties.correlationId,
    ack: () => Promise.resolve(), reject: () => Promise.resolve(),
  }
}

describe('[chord] protocol: the parts Celery keeps and how the body joins them', () => {
  it('a part is [1, task_id, state, result], as captured from Celery 5.2.6', () => {
    assert.equal(encodeChordPart('cbe6', 'SUCCESS', 0), '[1, "cbe6", "SUCCESS", 0]')
    assert.equal(encodeChordPart('1436', 'FAILURE', { exc_type: 'TypeError', exc_message: ['nope'], exc_module: 'builtins' }),
      '[1, "1436", "FAILURE", {"exc_type": "TypeError", "exc_message": ["nope"], "exc_module": "builtins"}]')
  })

  it('the join is the results in the given order; the first failed or revoked part fails it', () => {
    assert.deepEqual(joinChordParts(['[1, "a", "SUCCESS", 0]', '[1, "b", "SUCCESS", [2, "x"]]']), { ok: true, values: [0, [2, 'x']] })
    assert.deepEqual(joinChordParts([
      '[1, "a", "SUCCESS", 0]',
      '[1, "b", "FAILURE", {"exc_type": "TypeError", "exc_message": ["nope"], "exc_module": "builtins"}]',
      '[1, "c", "REVOKED", {"exc_type": "TaskRevokedError", "exc_message": ["terminated"], "exc_module": "celery.exceptions"}]',
    ]), { ok: false, error: "Dependency b raised TypeError('nope')" })
    const bad = joinChordParts(['[1, "a", "SUCCESS", 0]', '{not json'])
    assert.equal(bad.ok, false)
    assert.match((bad as { error: string }).error, /^Join error: ValueError\('unreadable chord part/)
  })
})

describe('[chord] worker: header tasks count, the last one sends or fails the body', () => {
  it('the last of three parts sends the body with the results in group order, prepended to its args', async () => {
    const { backend, parts, stored } = chordBackend(3)
    const { runner, published } = setup(backend)
    await runner.onDelivery(headerTask('proj.add', [2, 2], 2, bodySignature()))
    await runner.onDelivery(headerTask('proj.add', [0, 0], 0))
    assert.equal(published.length, 0, 'no body before the last part')
    const last = headerTask('proj.add', [1, 1], 1)
    await runner.onDelivery(last)
    await runner.idle()
    assert.equal(parts.length, 3)
    assert.equal(published.length, 1)
    const body = published[0]!
    assert.equal(body.task, 'proj.tsum')
    assert.equal(body.id, BODY_ID)
    assert.deepEqual(body.args, [[0, 2, 4]])
    assert.equal(body.parentId, (last.properties.headers as Record<string, unknown>).id, 'the part that completed the chord is the parent, as in Celery')
    assert.equal(stored.length, 3, 'each header result is stored as well')
  })

  it('an ignored result still counts towards the chord', async () => {
    const { backend, parts, stored } = chordBackend(1)
    const { runner, published } = setup(backend)
    await runner.onDelivery(headerTask('proj.quiet', [7], 0))
    await runner.idle()
    assert.equal(stored.length, 0)
    assert.deepEqual(parts.map((p) => p.part), [encodeChordPart((JSON.parse(parts[0]!.part) as string[])[1]!, 'SUCCESS', 7)])
    assert.deepEqual(published[0]?.args, [[7]])
  })

  it('a failed part fails the body with ChordError and sends its errbacks with the body id', async () => {
    const { backend, stored } = chordBackend(2)
    const { runner, published, log } = setup(backend)
    const errback: Signature = { task: 'proj.add', args: [], kwargs: {}, options: { queue: 'q' }, subtask_type: null, immutable: false }
    const body = bodySignature({ link_error: [errback] })
    await runner.onDelivery(headerTask('proj.add', [1, 1], 0, body))
    const failing = headerTask('proj.fail', ['nope'], 1, body)
    await runner.onDelivery(failing)
    await runner.idle()
    const failedId = (failing.properties.headers as Record<string, unknown>).id as string
    const bodyMeta = stored.find((s) => s.id === BODY_ID)
    assert.ok(bodyMeta, 'the body has a stored outcome')
    const meta = decodeResultMeta(bodyMeta.meta)
    assert.equal(meta.status, 'FAILURE')
    assert.deepEqual(meta.result, { exc_type: 'ChordError', exc_message: [`Dependency ${failedId} raised TypeError('nope')`], exc_module: 'celery.exceptions' })
    assert.deepEqual(published.map((p) => [p.task, p.args]), [['proj.add', [BODY_ID]]], 'only the errback goes out, with the body id')
    assert.ok(log.errors.some((e) => e === `Chord '${GROUP}' raised: ChordError("Dependency ${failedId} raised TypeError('nope')")`), log.errors.join('\n'))
  })

  it('a result backend without chord counts (rpc://) logs why the body will not run', async () => {
    const { backend } = chordBackend(1, false)
    const { runner, published, log } = setup(backend)
    await runner.onDelivery(headerTask('proj.add', [1, 1], 0))
    await runner.idle()
    assert.equal(published.length, 0)
    assert.ok(log.errors.some((e) => e.includes('keeps no chord counts; the body will not run')), log.errors.join('\n'))
  })
})
