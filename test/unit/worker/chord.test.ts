// Spec §2.3 on the worker side: a chord header task's end (success, failure,
// revoke; not a retry) is counted in the result backend, even with its result
// ignored, and the part that completes the chord sends the body with every
// result, or fails it with ChordError and runs its errbacks.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createApp } from '../../../src/app/app.js'
import type { ResultBackend } from '../../../src/backends/index.js'
import { Logger } from '../../../src/process/logger.js'
import {
  decodeResultMeta,
  decodeTaskMessage,
  encodeChordPart,
  encodeResultMeta,
  encodeTaskV2,
  joinChordParts,
  type Signature,
} from '../../../src/protocol/index.js'
import type { Delivery, Transport } from '../../../src/transport/index.js'
import type { EventDispatcher } from '../../../src/worker/events.js'
import { LimitedSet } from '../../../src/worker/control/limited-set.js'
import { SoloPool } from '../../../src/worker/pools/solo-pool.js'
import { TaskRunner } from '../../../src/worker/task-path/task-runner.js'
import { chordSize } from '../../../src/worker/task-path/chord-header.js'

class RecordingLogger extends Logger {
  readonly errors: string[] = []
  override log(level: Parameters<Logger['log']>[0], message: string): void {
    if (level === 'ERROR') this.errors.push(message)
  }
}

const GROUP = '11111111-2222-3333-4444-555555555555'
const BODY_ID = '99999999-8888-7777-6666-555555555555'

function bodySignature(extra: Record<string, unknown> = {}): Signature {
  return {
    task: 'proj.tsum',
    args: [],
    kwargs: {},
    options: { task_id: BODY_ID, queue: 'q', ...extra },
    subtask_type: null,
    immutable: false,
  }
}

/** A backend that completes the chord when `size` parts have come, as Redis does. */
function chordBackend(size: number, withChords = true) {
  const parts: { index: number | null; part: string }[] = []
  const stored: { id: string; meta: string }[] = []
  const sizes: { gid: string; size: number }[] = []
  const saved = new Map<string, unknown>()
  const backend: ResultBackend = {
    displayUrl: 'fake://',
    get: async (id) => {
      const last = stored.filter((s) => s.id === id).at(-1)
      return last ? decodeResultMeta(last.meta) : null
    },
    waitReady: async () => {
      throw new Error('not used')
    },
    store: async (id, meta) => {
      stored.push({ id, meta: typeof meta === 'string' ? meta : Buffer.from(meta).toString('utf8') })
    },
    forget: async () => undefined,
    close: async () => undefined,
  }
  if (withChords) {
    backend.setChordSize = async (gid, size) => {
      sizes.push({ gid, size })
    }
    backend.chordPartReturn = async (gid, index, part) => {
      assert.equal(gid, GROUP)
      parts.push({ index, part })
      if (parts.length < size) return null
      return [...parts].sort((a, b) => (a.index ?? Infinity) - (b.index ?? Infinity)).map((p) => p.part)
    }
    backend.saveGroupResult = async (gid, tuple) => {
      saved.set(gid, tuple)
    }
    backend.restoreGroupResult = async (gid) => saved.get(gid) ?? null
  }
  return { backend, parts, stored, sizes, saved }
}

function setup(backend: ResultBackend, failPublishOf?: string) {
  const app = createApp({ name: 'proj' })
  app.task('proj.add', (x: number, y: number) => x + y)
  app.task('proj.fail', (message: string) => {
    throw new TypeError(message)
  })
  app.task('proj.quiet', (x: number) => x, { ignoreResult: true })
  const published: ReturnType<typeof decodeTaskMessage>[] = []
  const transport = {
    kind: 'redis',
    declareQueue: async () => undefined,
    declareExchange: async () => undefined,
    bindQueue: async () => undefined,
    publish: async (_exchange: string, _key: string, message: { body: Buffer; properties: Delivery['properties'] }) => {
      if (failPublishOf && (message.properties.headers as Record<string, unknown>).task === failPublishOf) throw new Error('channel closed')
      published.push(
        decodeTaskMessage({
          body: message.body,
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          headers: message.properties.headers ?? {},
        }),
      )
    },
  } as unknown as Transport
  const log = new RecordingLogger('WARNING')
  const runner = new TaskRunner({
    app,
    transport,
    pool: new SoloPool(app, 4),
    backend,
    log,
    hostname: 'w@h',
    acksLate: true,
    timeLimit: null,
    softTimeLimit: null,
    events: { taskEvents: false, sendTask: () => undefined } as unknown as EventDispatcher,
    revoked: new LimitedSet(),
    onScheduledChange: () => undefined,
  })
  return { runner, published, log }
}

function headerTask(name: string, args: unknown[], index: number, body = bodySignature()): Delivery {
  return deliveryOf(encodeTaskV2(name, { args, origin: 'gen@test', group: GROUP, groupIndex: index, embed: { chord: body } }))
}

/** A task whose chain's next step is `next` (the chain travels reversed: next is last). */
function chainStep(name: string, args: unknown[], next: Signature, rest: Signature[] = []): Delivery {
  return deliveryOf(encodeTaskV2(name, { args, origin: 'gen@test', embed: { chain: [...rest, next] } }))
}

function deliveryOf(m: ReturnType<typeof encodeTaskV2>): Delivery {
  return {
    body: Buffer.from(m.body),
    properties: {
      contentType: m.contentType,
      contentEncoding: m.contentEncoding,
      headers: m.headers as Delivery['properties']['headers'],
      deliveryMode: 2,
      priority: 0,
    },
    exchange: '',
    routingKey: 'q',
    queue: 'q',
    redelivered: false,
    deliveryTag: m.properties.correlationId,
    ack: () => Promise.resolve(),
    reject: () => Promise.resolve(),
  }
}

describe('[chord] protocol: the parts Celery keeps and how the body joins them', () => {
  it('a part is [1, task_id, state, result], as captured from Celery 5.2.6', () => {
    assert.equal(encodeChordPart('cbe6', 'SUCCESS', 0), '[1, "cbe6", "SUCCESS", 0]')
    assert.equal(
      encodeChordPart('1436', 'FAILURE', { exc_type: 'TypeError', exc_message: ['nope'], exc_module: 'builtins' }),
      '[1, "1436", "FAILURE", {"exc_type": "TypeError", "exc_message": ["nope"], "exc_module": "builtins"}]',
    )
  })

  it('the join is the results in the given order; the first failed or revoked part fails it', () => {
    assert.deepEqual(joinChordParts(['[1, "a", "SUCCESS", 0]', '[1, "b", "SUCCESS", [2, "x"]]']), { ok: true, values: [0, [2, 'x']] })
    assert.deepEqual(
      joinChordParts([
        '[1, "a", "SUCCESS", 0]',
        '[1, "b", "FAILURE", {"exc_type": "TypeError", "exc_message": ["nope"], "exc_module": "builtins"}]',
        '[1, "c", "REVOKED", {"exc_type": "TaskRevokedError", "exc_message": ["terminated"], "exc_module": "celery.exceptions"}]',
      ]),
      { ok: false, error: "Dependency b raised TypeError('nope')" },
    )
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
    assert.equal(
      body.parentId,
      (last.properties.headers as Record<string, unknown>).id,
      'the part that completed the chord is the parent, as in Celery',
    )
    assert.equal(stored.length, 3, 'each header result is stored as well')
  })

  it('an ignored result still counts towards the chord', async () => {
    const { backend, parts, stored } = chordBackend(1)
    const { runner, published } = setup(backend)
    await runner.onDelivery(headerTask('proj.quiet', [7], 0))
    await runner.idle()
    assert.equal(stored.length, 0)
    assert.deepEqual(
      parts.map((p) => p.part),
      [encodeChordPart((JSON.parse(parts[0]!.part) as string[])[1]!, 'SUCCESS', 7)],
    )
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
    assert.deepEqual(meta.result, {
      exc_type: 'ChordError',
      exc_message: [`Dependency ${failedId} raised TypeError('nope')`],
      exc_module: 'celery.exceptions',
    })
    assert.deepEqual(
      published.map((p) => [p.task, p.args]),
      [['proj.add', [BODY_ID]]],
      'only the errback goes out, with the body id',
    )
    assert.ok(
      log.errors.some((e) => e === `Chord '${GROUP}' raised: ChordError("Dependency ${failedId} raised TypeError('nope')")`),
      log.errors.join('\n'),
    )
  })

  it('a body that cannot be sent fails with ChordError("Callback error: …"), as in Celery', async () => {
    const { backend, stored } = chordBackend(1)
    const { runner, log } = setup(backend, 'proj.tsum')
    await runner.onDelivery(headerTask('proj.add', [1, 1], 0))
    await runner.idle()
    const meta = decodeResultMeta(stored.find((s) => s.id === BODY_ID)!.meta)
    assert.deepEqual(meta.result, {
      exc_type: 'ChordError',
      exc_message: ["Callback error: Error('channel closed')"],
      exc_module: 'celery.exceptions',
    })
    assert.ok(
      log.errors.some((e) => e.includes('Callback error')),
      log.errors.join('\n'),
    )
  })

  it('a result backend without chord counts (rpc://) logs why the body will not run', async () => {
    const { backend } = chordBackend(1, false)
    const { runner, published, log } = setup(backend)
    await runner.onDelivery(headerTask('proj.add', [1, 1], 0))
    await runner.idle()
    assert.equal(published.length, 0)
    assert.ok(
      log.errors.some((e) => e.includes('keeps no chord counts; the body will not run')),
      log.errors.join('\n'),
    )
  })
})

const signaturesOf = (group: Signature): Signature[] => (group.kwargs as { tasks: Signature[] }).tasks

const plain = (task: string, args: unknown[], options: Record<string, unknown> = {}): Signature => ({
  task,
  args,
  kwargs: {},
  options: { queue: 'q', ...options },
  subtask_type: null,
  immutable: false,
})

describe('[canvas] a chain step that is a group, chord or chain is fanned out by the worker, as Celery applies it', () => {
  it('group: each member is sent with the previous result prepended, the group id and its index', async () => {
    const { backend } = chordBackend(1)
    const { runner, published } = setup(backend)
    const group: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [plain('proj.add', [10], { group_index: 0 }), plain('proj.add', [20], { group_index: 1 })] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    await runner.onDelivery(chainStep('proj.add', [1, 2], group))
    await runner.idle()
    assert.deepEqual(
      published.map((p) => [p.task, p.args, p.group, p.groupIndex]),
      [
        ['proj.add', [3, 10], GROUP, 0],
        ['proj.add', [3, 20], GROUP, 1],
      ],
    )
  })

  it('chord: the size is set first, each header task carries the body, and the rest of the chain rides on the body', async () => {
    const { backend, sizes } = chordBackend(1)
    const { runner, published } = setup(backend)
    const body = bodySignature()
    const header: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [plain('proj.add', [1]), plain('proj.add', [2])] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    const chord: Signature = {
      task: 'celery.chord',
      args: [],
      kwargs: { kwargs: {}, header, body },
      options: {},
      subtask_type: 'chord',
      immutable: false,
    }
    const after = plain('proj.mul', [10])
    await runner.onDelivery(chainStep('proj.add', [3, 3], chord, [after]))
    await runner.idle()
    assert.deepEqual(sizes, [{ gid: GROUP, size: 2 }])
    assert.deepEqual(
      published.map((p) => [p.args, p.group, p.groupIndex]),
      [
        [[6, 1], GROUP, 0],
        [[6, 2], GROUP, 1],
      ],
    )
    for (const p of published) {
      assert.equal(p.embed.chord?.task, 'proj.tsum')
      assert.deepEqual((p.embed.chord?.options as { chain?: Signature[] }).chain, [after], 'the chain goes on after the body')
    }
  })

  it('group holding a chain: the chain member applies itself, the plain member joins the group', async () => {
    const { backend } = chordBackend(1)
    const { runner, published } = setup(backend)
    const inner: Signature = {
      task: 'celery.chain',
      args: [],
      kwargs: { tasks: [plain('proj.add', [1]), plain('proj.mul', [2])] },
      options: {},
      subtask_type: 'chain',
      immutable: false,
    }
    const group: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [inner, plain('proj.add', [10])] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    await runner.onDelivery(chainStep('proj.add', [1, 2], group))
    await runner.idle()
    assert.deepEqual(
      published.map((p) => [p.task, p.args, p.embed.chain?.map((c) => c.task) ?? null, p.group]),
      [
        ['proj.add', [3, 1], ['proj.mul'], null],
        ['proj.add', [3, 10], null, GROUP],
      ],
    )
  })

  it('chain: its first task is sent with the rest reversed behind it', async () => {
    const { backend } = chordBackend(1)
    const { runner, published } = setup(backend)
    const inner: Signature = {
      task: 'celery.chain',
      args: [],
      kwargs: { tasks: [plain('proj.add', [1]), plain('proj.mul', [2]), plain('proj.add', [5])] },
      options: {},
      subtask_type: 'chain',
      immutable: false,
    }
    await runner.onDelivery(chainStep('proj.add', [1, 1], inner))
    await runner.idle()
    assert.equal(published.length, 1)
    assert.deepEqual(published[0]!.args, [2, 1])
    assert.deepEqual(
      published[0]!.embed.chain?.map((sig) => sig.task),
      ['proj.add', 'proj.mul'],
    )
  })

  it("a chord header's nested group is spliced in as Celery 5.2.6 does (its members reversed) and counted per task", async () => {
    const { backend, sizes } = chordBackend(1)
    const { runner, published } = setup(backend)
    const nested: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [plain('proj.add', [10]), plain('proj.add', [20])] },
      options: {},
      subtask_type: 'group',
      immutable: false,
    }
    const header: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [plain('proj.add', [1]), nested, plain('proj.add', [2])] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    const chord: Signature = {
      task: 'celery.chord',
      args: [],
      kwargs: { kwargs: {}, header, body: bodySignature() },
      options: {},
      subtask_type: 'chord',
      immutable: false,
    }
    await runner.onDelivery(chainStep('proj.add', [1, 1], chord))
    await runner.idle()
    assert.deepEqual(sizes, [{ gid: GROUP, size: 4 }])
    assert.deepEqual(
      published.map((p) => [p.args, p.group, p.groupIndex, p.embed.chord?.task]),
      [
        [[2, 1], GROUP, 0, 'proj.tsum'],
        [[2, 20], GROUP, 1, 'proj.tsum'],
        [[2, 10], GROUP, 2, 'proj.tsum'],
        [[2, 2], GROUP, 3, 'proj.tsum'],
      ],
    )
  })

  it("a chord header's chain counts once: its first step gets the args, its last step carries the group, index and body", async () => {
    const { backend, sizes } = chordBackend(1)
    const { runner, published } = setup(backend)
    const inner: Signature = {
      task: 'celery.chain',
      args: [],
      kwargs: { tasks: [plain('proj.add', [100]), plain('proj.mul', [2])] },
      options: {},
      subtask_type: 'chain',
      immutable: false,
    }
    const header: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [inner, plain('proj.add', [1])] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    const chord: Signature = {
      task: 'celery.chord',
      args: [],
      kwargs: { kwargs: {}, header, body: bodySignature() },
      options: {},
      subtask_type: 'chord',
      immutable: false,
    }
    await runner.onDelivery(chainStep('proj.add', [1, 2], chord))
    await runner.idle()
    assert.deepEqual(sizes, [{ gid: GROUP, size: 2 }])
    const [first, second] = published
    assert.deepEqual([first!.task, first!.args, first!.group, first!.embed.chord ?? null], ['proj.add', [3, 100], null, null])
    const last = first!.embed.chain![0]!
    assert.equal(last.task, 'proj.mul')
    assert.equal(last.options?.group_id, GROUP)
    assert.equal(last.options?.group_index, 0)
    assert.equal((last.options?.chord as Signature).task, 'proj.tsum')
    assert.deepEqual([second!.args, second!.group, second!.groupIndex], [[3, 1], GROUP, 1])

    // The chain's last step, run on its own, is then an ordinary header task.
    published.length = 0
    await runner.onDelivery(chainStep('proj.add', [3, 100], last))
    await runner.idle()
    assert.deepEqual(
      [published[0]!.task, published[0]!.args, published[0]!.group, published[0]!.groupIndex, published[0]!.embed.chord?.task],
      ['proj.mul', [103, 2], GROUP, 0, 'proj.tsum'],
    )
  })

  it("a chord header's chord counts once, by its body, which carries the outer group, index and body", async () => {
    const { backend, sizes } = chordBackend(1)
    const { runner, published } = setup(backend)
    const innerGroup = '22222222-3333-4444-5555-666666666666'
    const innerHeader: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [plain('proj.add', [1]), plain('proj.add', [2])] },
      options: { task_id: innerGroup },
      subtask_type: 'group',
      immutable: false,
    }
    const inner: Signature = {
      task: 'celery.chord',
      args: [],
      kwargs: { kwargs: {}, header: innerHeader, body: plain('proj.tsum', []) },
      options: {},
      subtask_type: 'chord',
      immutable: false,
    }
    const header: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [inner, plain('proj.add', [10])] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    const chord: Signature = {
      task: 'celery.chord',
      args: [],
      kwargs: { kwargs: {}, header, body: bodySignature() },
      options: {},
      subtask_type: 'chord',
      immutable: false,
    }
    await runner.onDelivery(chainStep('proj.add', [1, 2], chord))
    await runner.idle()
    assert.deepEqual(sizes, [
      { gid: GROUP, size: 2 },
      { gid: innerGroup, size: 2 },
    ])
    assert.deepEqual(
      published.map((p) => [p.args, p.group, p.groupIndex]),
      [
        [[3, 1], innerGroup, 0],
        [[3, 2], innerGroup, 1],
        [[3, 10], GROUP, 1],
      ],
    )
    const innerBody = published[0]!.embed.chord!
    assert.equal(innerBody.task, 'proj.tsum')
    assert.equal(innerBody.options?.group_id, GROUP)
    assert.equal(innerBody.options?.group_index, 0)
    assert.equal((innerBody.options?.chord as Signature).task, 'proj.tsum')
    assert.equal(((innerBody.options?.chord as Signature).options as { task_id: string }).task_id, BODY_ID)
  })

  it("a chord header member that is a chain ending in a group (Celery's test_nested_group_chain): its members count, the header is saved whole, and the group's members count in the chord", async () => {
    // add.si(1, 0) | chord([add.si(1, 100), add.si(1, 200) | group(add.si(1, 1000), add.si(1, 2000))], add.si(1, 10)),
    // with the ids Celery's client froze into it.
    const { backend, sizes, saved } = chordBackend(3)
    const { runner, published } = setup(backend)
    const inner = 'inner-group-id'
    const si = (args: unknown[], id: string): Signature => ({ ...plain('proj.add', args, { task_id: id }), immutable: true })
    const tail: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [si([1, 1000], 't1000'), si([1, 2000], 't2000')] },
      options: { task_id: inner },
      subtask_type: 'group',
      immutable: false,
    }
    const member: Signature = {
      task: 'celery.chain',
      args: [],
      kwargs: { tasks: [si([1, 200], 't200'), tail] },
      options: {},
      subtask_type: 'chain',
      immutable: false,
    }
    const header: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [si([1, 100], 't100'), member] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    const body = { ...bodySignature(), task: 'proj.add', args: [1, 10], immutable: true }
    const chord: Signature = {
      task: 'celery.chord',
      args: [],
      kwargs: { kwargs: {}, header, body },
      options: {},
      subtask_type: 'chord',
      immutable: false,
    }
    await runner.onDelivery(chainStep('proj.add', [1, 0], chord))
    await runner.idle()

    // Celery's _descend: the plain task and the two members of the chain's group.
    assert.deepEqual(sizes, [{ gid: GROUP, size: 3 }])
    // What Celery 5.2.6's worker saved for this shape (MONITOR), the chain's group with its parent step.
    assert.deepEqual(saved.get(GROUP), [
      [GROUP, null],
      [
        [['t100', null], null],
        [
          [inner, [['t200', null], null]],
          [
            [['t1000', null], null],
            [['t2000', null], null],
          ],
        ],
      ],
    ])
    assert.deepEqual(
      published.map((p) => [p.id, p.args, p.group, p.groupIndex, p.embed.chord?.options?.task_id ?? null]),
      [
        ['t100', [1, 100], GROUP, 0, BODY_ID],
        ['t200', [1, 200], null, null, null],
      ],
    )
    const group = published[1]!.embed.chain![0]!
    assert.deepEqual(
      [
        group.task,
        group.options?.task_id,
        group.options?.group_id,
        group.options?.group_index,
        (group.options?.chord as Signature).options?.task_id,
      ],
      ['celery.group', inner, GROUP, 1, BODY_ID],
    )
    for (const [i, m] of signaturesOf(group).entries()) assert.deepEqual([m.options?.group_id, m.options?.group_index], [GROUP, i])

    // Applied after add(1, 200), its members count in the chord, both with the group's index, as Celery's group.apply_async passes it on.
    published.length = 0
    await runner.onDelivery(chainStep('proj.add', [1, 200], group))
    await runner.idle()
    assert.deepEqual(
      published.map((p) => [p.id, p.args, p.group, p.groupIndex, p.embed.chord?.options?.task_id ?? null]),
      [
        ['t1000', [1, 1000], GROUP, 1, BODY_ID],
        ['t2000', [1, 2000], GROUP, 1, BODY_ID],
      ],
    )
  })

  it("a chord header that is one chain ending in a group (Celery's test_nested_chord_group_chain_group_tail): the group gets an id of its own, the body gets [[42, 42]]", async () => {
    const { backend, sizes, saved } = chordBackend(2)
    const { runner, published } = setup(backend)
    const tail: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [plain('proj.add', [0]), plain('proj.add', [0])] },
      options: {},
      subtask_type: 'group',
      immutable: false,
    }
    const member: Signature = {
      task: 'celery.chain',
      args: [],
      kwargs: { tasks: [plain('proj.add', [40]), tail] },
      options: {},
      subtask_type: 'chain',
      immutable: false,
    }
    const header: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [member] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    const chord: Signature = {
      task: 'celery.chord',
      args: [],
      kwargs: { kwargs: {}, header, body: bodySignature() },
      options: {},
      subtask_type: 'chord',
      immutable: false,
    }
    await runner.onDelivery(chainStep('proj.add', [1, 1], chord))
    await runner.idle()
    assert.deepEqual(sizes, [{ gid: GROUP, size: 2 }])
    const group = published[0]!.embed.chain![0]!
    // Not the chord's id (Celery's `group_id or uuid()`): a Python worker applying the group sets a chord size under its id.
    const groupOwnId = group.options?.task_id as string
    assert.match(groupOwnId, /^[0-9a-f-]{36}$/)
    assert.notEqual(groupOwnId, GROUP)
    assert.deepEqual([group.options?.group_id, group.options?.group_index], [GROUP, 0])
    const ids = signaturesOf(group).map((m) => m.options?.task_id as string)
    assert.deepEqual(saved.get(GROUP), [
      [GROUP, null],
      [
        [
          [groupOwnId, null],
          [
            [[ids[0], null], null],
            [[ids[1], null], null],
          ],
        ],
      ],
    ])

    // add(2, 40) ends, the group goes out, its two members end: the body gets the nested list.
    published.length = 0
    await runner.onDelivery(chainStep('proj.add', [2, 40], group))
    await runner.idle()
    const members = [...published]
    assert.deepEqual(
      members.map((p) => [p.id, p.args, p.group, p.groupIndex]),
      [
        [ids[0], [42, 0], GROUP, 0],
        [ids[1], [42, 0], GROUP, 0],
      ],
    )
    published.length = 0
    for (const m of members)
      await runner.onDelivery(
        deliveryOf(
          encodeTaskV2(m.task, {
            id: m.id,
            args: m.args,
            origin: 'gen@test',
            group: m.group,
            groupIndex: m.groupIndex,
            embed: { chord: m.embed.chord },
          }),
        ),
      )
    await runner.idle()
    assert.deepEqual(
      published.map((p) => [p.task, p.id, p.args]),
      [['proj.tsum', BODY_ID, [[[42, 42]]]]],
    )
  })

  it('a saved header whose group member failed fails the body with ChordError("Join error: …"), as Celery\'s join raises it', async () => {
    const { backend, stored, saved } = chordBackend(2)
    const { runner, published } = setup(backend)
    saved.set(GROUP, [
      [GROUP, null],
      [
        [['ok', null], null],
        [['g', null], [[['bad', null], null]]],
      ],
    ])
    await runner.onDelivery(
      deliveryOf(
        encodeTaskV2('proj.add', {
          id: 'ok',
          args: [1, 1],
          origin: 'gen@test',
          group: GROUP,
          groupIndex: 0,
          embed: { chord: bodySignature() },
        }),
      ),
    )
    await runner.onDelivery(
      deliveryOf(
        encodeTaskV2('proj.fail', {
          id: 'bad',
          args: ['nope'],
          origin: 'gen@test',
          group: GROUP,
          groupIndex: 1,
          embed: { chord: bodySignature() },
        }),
      ),
    )
    await runner.idle()
    assert.equal(published.length, 0)
    const meta = decodeResultMeta(stored.find((s) => s.id === BODY_ID)!.meta)
    assert.deepEqual(meta.result, {
      exc_type: 'ChordError',
      exc_message: ["Join error: TypeError('nope')"],
      exc_module: 'celery.exceptions',
    })
  })

  it('a group holding a group: the inner members join the outer group', async () => {
    const { backend } = chordBackend(1)
    const { runner, published } = setup(backend)
    const nested: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [plain('proj.add', [10]), plain('proj.add', [20])] },
      options: { task_id: 'inner-group' },
      subtask_type: 'group',
      immutable: false,
    }
    const group: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [nested, plain('proj.add', [30])] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    await runner.onDelivery(chainStep('proj.add', [1, 2], group))
    await runner.idle()
    assert.deepEqual(
      published.map((p) => [p.args, p.group]),
      [
        [[3, 10], GROUP],
        [[3, 20], GROUP],
        [[3, 30], GROUP],
      ],
    )
  })
})

describe('[canvas] callbacks (link)', () => {
  it('one callback is sent on its own, without a group', async () => {
    const { backend } = chordBackend(1)
    const { runner, published } = setup(backend)
    await runner.onDelivery(
      deliveryOf(encodeTaskV2('proj.add', { args: [1, 2], origin: 'gen@test', embed: { callbacks: [plain('proj.mul', [10])] } })),
    )
    await runner.idle()
    assert.deepEqual(
      published.map((p) => [p.task, p.args, p.group]),
      [['proj.mul', [3, 10], null]],
    )
  })

  it("several callbacks go out as one group, as Celery's tracer sends them: a shared new group id, no index", async () => {
    const { backend } = chordBackend(1)
    const { runner, published } = setup(backend)
    const inner: Signature = {
      task: 'celery.chain',
      args: [],
      kwargs: { tasks: [plain('proj.add', [1]), plain('proj.mul', [2])] },
      options: {},
      subtask_type: 'chain',
      immutable: false,
    }
    const ownGroup: Signature = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [plain('proj.add', [7])] },
      options: { task_id: GROUP },
      subtask_type: 'group',
      immutable: false,
    }
    await runner.onDelivery(
      deliveryOf(
        encodeTaskV2('proj.add', { args: [1, 2], origin: 'gen@test', embed: { callbacks: [plain('proj.mul', [10]), inner, ownGroup] } }),
      ),
    )
    await runner.idle()
    assert.equal(published.length, 3)
    const [mul, chainStart, own] = published
    assert.match(mul!.group ?? '', /^[0-9a-f-]{36}$/)
    assert.equal(mul!.groupIndex, null)
    assert.deepEqual(mul!.args, [3, 10])
    assert.deepEqual([chainStart!.args, chainStart!.group], [[3, 1], null])
    assert.equal(chainStart!.embed.chain![0]!.options?.group_id, mul!.group, 'the chain joins the group by its last step')
    assert.deepEqual([own!.args, own!.group], [[3, 7], GROUP])
  })
})

describe("[canvas] a signature's own options shape the message it becomes", () => {
  it('countdown, expires, time limits and ignore_result of a chain step are kept', async () => {
    const { backend } = chordBackend(1)
    const { runner, published } = setup(backend)
    const before = Date.now()
    await runner.onDelivery(
      chainStep(
        'proj.add',
        [1, 1],
        plain('proj.mul', [3], { countdown: 60, expires: 3600, time_limit: 30, soft_time_limit: 20, ignore_result: true }),
      ),
    )
    await runner.idle()
    const m = published[0]!
    assert.ok(m.eta && Date.parse(m.eta) >= before + 59_000, `eta ${m.eta}`)
    assert.ok(m.expires && Date.parse(m.expires) >= before + 3_599_000, `expires ${m.expires}`)
    assert.deepEqual(m.timelimit, [30, 20])
    assert.equal(m.ignoreResult, true)
  })
})

describe("[chord] celery.chord_unlock (the SQL backends' chords)", () => {
  it('a header holding a group (its result tuple nested): waits for every task in it, then the body gets the nested list', async () => {
    const { backend, stored } = chordBackend(1, false)
    const { runner, published } = setup(backend)
    const result = [
      [['a', null], null],
      [
        ['g', null],
        [
          [['b', null], null],
          [['c', null], null],
        ],
      ],
    ]
    const unlock = () =>
      deliveryOf(
        encodeTaskV2('celery.chord_unlock', {
          args: [GROUP, bodySignature()],
          kwargs: { interval: 1, max_retries: null, result },
          origin: 'gen@test',
        }),
      )
    const done = (id: string, value: unknown) =>
      stored.push({ id, meta: encodeResultMeta({ taskId: id, status: 'SUCCESS', result: value }) })
    done('a', 1)
    done('b', 2)
    await runner.onDelivery(unlock())
    await runner.idle()
    assert.deepEqual(
      published.map((p) => [p.task, p.id]),
      [['celery.chord_unlock', published[0]?.id]],
      'c not ready: chord_unlock is retried',
    )
    published.length = 0
    done('c', 3)
    await runner.onDelivery(unlock())
    await runner.idle()
    assert.deepEqual(
      published.map((p) => [p.task, p.args]),
      [['proj.tsum', [[1, [2, 3]]]]],
    )
  })
})

describe("[chord] a header member's count is Celery's _chord._descend", () => {
  const t = (name = 'proj.add') => plain(name, [])
  const group = (...tasks: Signature[]): Signature => ({
    task: 'celery.group',
    args: [],
    kwargs: { tasks },
    options: {},
    subtask_type: 'group',
    immutable: false,
  })
  const chain = (...tasks: Signature[]): Signature => ({
    task: 'celery.chain',
    args: [],
    kwargs: { tasks },
    options: {},
    subtask_type: 'chain',
    immutable: false,
  })
  const chord = (header: Signature[], body: Signature): Signature => ({
    task: 'celery.chord',
    args: [],
    kwargs: { header: group(...header), body, kwargs: {} },
    options: {},
    subtask_type: 'chord',
    immutable: false,
  })

  it('a task one, a group its members, a chain its last step that counts, a chord its body', () => {
    assert.equal(chordSize(t()), 1)
    assert.equal(chordSize(group(t(), t(), group(t(), t()))), 4)
    assert.equal(chordSize(chain(t(), group(t(), t()))), 2)
    assert.equal(chordSize(chain(t(), group())), 1, 'an empty group at the end: the step before counts')
    assert.equal(chordSize(chain()), 0)
    assert.equal(chordSize(chord([t(), t(), t()], t())), 1)
    assert.equal(chordSize(chord([t()], group(t(), t()))), 2)
    assert.equal(chordSize(group(chain(t(), group(t(), t())), t())), 3)
  })
})
