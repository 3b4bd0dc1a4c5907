// Celery parity in the worker's run of a task, without a broker: what a task
// reads of its request (task.request's delivery_info, eta, expires, reply_to,
// group, group_index, callbacks, errbacks, chain, chord), Task.replace(sig),
// the hooks a result that cannot be encoded runs (on_failure, as Celery's
// trace), and task_internal_error.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createApp, signature, type App } from '../../../src/app/index.js'
import type { ResultBackend } from '../../../src/backends/index.js'
import { Logger } from '../../../src/process/logger.js'
import { currentTask, type TaskContext } from '../../../src/app/task-context.js'
import { decodeTaskMessage, encodeTaskV2, type Signature, type TaskSendOptions } from '../../../src/protocol/index.js'
import type { Delivery, Transport } from '../../../src/transport/index.js'
import type { EventDispatcher } from '../../../src/worker/events.js'
import { LimitedSet } from '../../../src/worker/control/limited-set.js'
import { executeJob, unsendableOutcome } from '../../../src/app/execution/executor.js'
import type { Job } from '../../../src/app/execution/jobs.js'
import { SoloPool } from '../../../src/worker/pools/solo-pool.js'
import { TaskRunner } from '../../../src/worker/task-path/task-runner.js'

class RecordingLogger extends Logger {
  readonly lines: string[] = []
  override log(level: Parameters<Logger['log']>[0], message: string): void {
    this.lines.push(`${level} ${message}`)
  }
}

const GROUP = '11111111-2222-3333-4444-555555555555'
const ID = 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee'
const ROOT = 'rrrrrrrr-0000-0000-0000-000000000000'

const sig = (task: string, args: unknown[] = [], options: Record<string, unknown> = {}): Signature => ({
  task,
  args,
  kwargs: {},
  options,
  subtask_type: null,
  immutable: false,
})

function fakeBackend(failStores = false) {
  const stored: Array<{ id: string; status: string; meta: Record<string, unknown> }> = []
  const sizes: Array<{ gid: string; size: number }> = []
  const backend: ResultBackend = {
    displayUrl: 'fake://',
    get: async () => null,
    waitReady: async () => {
      throw new Error('not used')
    },
    store: async (id, meta, status) => {
      if (failStores) throw new Error('backend down')
      stored.push({
        id,
        status: status as string,
        meta: JSON.parse(typeof meta === 'string' ? meta : Buffer.from(meta).toString('utf8')) as Record<string, unknown>,
      })
    },
    forget: async () => undefined,
    close: async () => undefined,
    setChordSize: async (gid, size) => {
      sizes.push({ gid, size })
    },
    chordPartReturn: async () => null,
  }
  return { backend, stored, sizes }
}

function setup(app: App, backend: ResultBackend | null, kind: 'amqp' | 'redis' = 'amqp', loopback = false) {
  const published: Array<ReturnType<typeof decodeTaskMessage> & { queue: string }> = []
  const transport = {
    kind,
    declareQueue: async () => undefined,
    declareExchange: async () => undefined,
    bindQueue: async () => undefined,
    publish: async (_exchange: string, key: string, message: { body: Buffer; properties: Delivery['properties'] }) => {
      published.push({
        ...decodeTaskMessage({
          body: message.body,
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          headers: message.properties.headers ?? {},
        }),
        queue: key,
      })
      // As a fast broker does: the message is delivered to this worker before publish() returns.
      if (loopback) {
        void runner.onDelivery({
          body: message.body,
          properties: message.properties,
          exchange: '',
          routingKey: key,
          queue: key,
          redelivered: false,
          deliveryTag: `loop-${published.length}`,
          ack: async () => undefined,
          reject: async () => undefined,
        })
      }
    },
  } as unknown as Transport
  const log = new RecordingLogger('INFO')
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

function deliveryOf(
  name: string,
  options: Omit<TaskSendOptions, 'origin'> = {},
  props: { replyTo?: string; priority?: number; redelivered?: boolean } = {},
) {
  const m = encodeTaskV2(name, { origin: 'gen@test', ...options })
  const settled: string[] = []
  const d: Delivery & { settled: string[] } = {
    body: Buffer.from(m.body),
    properties: {
      contentType: m.contentType,
      contentEncoding: m.contentEncoding,
      headers: m.headers as Delivery['properties']['headers'],
      deliveryMode: 2,
      priority: props.priority ?? 0,
      ...(props.replyTo ? { replyTo: props.replyTo } : {}),
    },
    exchange: '',
    routingKey: 'q',
    queue: 'q',
    redelivered: props.redelivered ?? false,
    deliveryTag: m.properties.correlationId,
    settled,
    ack: async () => {
      settled.push('ack')
    },
    reject: async ({ requeue }) => {
      settled.push(requeue ? 'requeue' : 'reject')
    },
  }
  return d
}

async function deliver(runner: TaskRunner, d: Delivery): Promise<void> {
  await runner.onDelivery(d)
  await runner.idle()
}

/** The request fields a task reads, as the fixture tasks of the interop test return them. */
function requestOf(ctx: TaskContext) {
  const { deliveryInfo, eta, expires, replyTo, group, groupId, groupIndex, callbacks, errbacks, chain, chord } = ctx
  return { deliveryInfo, eta, expires, replyTo, group, groupId, groupIndex, callbacks, errbacks, chain, chord }
}

describe("[parity] currentTask() has the rest of Celery's task.request", () => {
  it('delivery info, eta, expires, reply_to, group, group index, callbacks, errbacks, chain and chord, as the message has them', async () => {
    const app = createApp({ name: 'proj' })
    app.task('proj.ctx', () => requestOf(currentTask()))
    const { backend, stored } = fakeBackend()
    const { runner } = setup(app, backend)
    const eta = new Date(Date.now() - 1000).toISOString()
    const expires = new Date(Date.now() + 60_000).toISOString()
    const body = sig('proj.tsum', [], { task_id: 'body-id' })
    const embed = { callbacks: [sig('proj.log', ['cb'])], errbacks: [sig('proj.err')], chain: [sig('proj.mul', [10])], chord: body }
    await deliver(
      runner,
      deliveryOf('proj.ctx', { id: ID, eta, expires, group: GROUP, groupIndex: 2, embed }, { replyTo: 'reply-q', priority: 3 }),
    )
    assert.equal(stored.length, 1)
    assert.deepEqual(stored[0]!.meta.result, {
      deliveryInfo: { exchange: '', routingKey: 'q', priority: 3, redelivered: false },
      eta,
      expires,
      replyTo: 'reply-q',
      group: GROUP,
      groupId: GROUP,
      groupIndex: 2,
      ...embed,
    })
  })

  it("a plain message gives nulls, as Celery's Context defaults; on Redis, redelivered is null unless the message was restored", async () => {
    const app = createApp({ name: 'proj' })
    app.task('proj.ctx', () => requestOf(currentTask()))
    const { backend, stored } = fakeBackend()
    const { runner } = setup(app, backend, 'redis')
    await deliver(runner, deliveryOf('proj.ctx'))
    await deliver(runner, deliveryOf('proj.ctx', {}, { redelivered: true }))
    assert.deepEqual(stored[0]!.meta.result, {
      deliveryInfo: { exchange: '', routingKey: 'q', priority: 0, redelivered: null },
      eta: null,
      expires: null,
      replyTo: null,
      group: null,
      groupId: null,
      groupIndex: null,
      callbacks: null,
      errbacks: null,
      chain: null,
      chord: null,
    })
    assert.equal((stored[1]!.meta.result as { deliveryInfo: { redelivered: unknown } }).deliveryInfo.redelivered, true)
  })

  it('a run with no delivery (an eager call) still has every field', () => {
    const app = createApp({ name: 'proj' })
    app.task('proj.ctx', () => requestOf(currentTask()))
    const job: Job = {
      id: ID,
      task: 'proj.ctx',
      args: [],
      kwargs: {},
      retries: 0,
      rootId: ID,
      parentId: null,
      group: null,
      hostname: 'h',
      softTimeLimit: null,
    }
    const outcome = executeJob(app, job).immediate!
    assert.equal(outcome.status, 'success')
    assert.deepEqual((outcome as { value: unknown }).value, {
      deliveryInfo: { exchange: '', routingKey: '', priority: null, redelivered: null },
      eta: null,
      expires: null,
      replyTo: null,
      group: null,
      groupId: null,
      groupIndex: null,
      callbacks: null,
      errbacks: null,
      chain: null,
      chord: null,
    })
  })
})

describe("[parity] replace(sig), as Celery's Task.replace", () => {
  function replacingApp(make: () => Signature) {
    const app = createApp({ name: 'proj' })
    app.task('proj.add', (x: number, y: number) => x + y)
    app.task('proj.rep', (ctx: TaskContext) => ctx.replace(make()), { bind: true })
    return app
  }

  it("a task: sent with the replaced task's id, callbacks, errbacks, group, chord and chain; nothing stored for the replaced run, acked once", async () => {
    const app = replacingApp(() => sig('proj.add', [2, 3]))
    const { backend, stored } = fakeBackend()
    const { runner, published, log } = setup(app, backend)
    const chord = sig('proj.tsum', [], { task_id: 'body-id' })
    const embed = { callbacks: [sig('proj.mul', [10])], errbacks: [sig('proj.err')], chain: [sig('proj.last'), sig('proj.next')], chord }
    const d = deliveryOf('proj.rep', { id: ID, rootId: ROOT, group: GROUP, groupIndex: 1, embed }, { replyTo: 'client-q' })
    await deliver(runner, d)
    assert.deepEqual(d.settled, ['ack'])
    assert.deepEqual(stored, [], 'the replacement stores the result under this id, the replaced run nothing')
    assert.equal(published.length, 1)
    const r = published[0]!
    assert.deepEqual([r.task, r.id, r.args, r.rootId, r.parentId, r.group, r.groupIndex], ['proj.add', ID, [2, 3], ROOT, ID, GROUP, 1])
    assert.deepEqual(r.embed, embed)
    assert.equal(r.headers.reply_to, undefined)
    assert.ok(
      log.lines.some((l) => l === `INFO Task proj.rep[${ID}] ignored`),
      log.lines.join('\n'),
    )
  })

  it("a chain: its last step takes the id and the callbacks (once), every step the errbacks, and the replaced task's chain follows it", async () => {
    const chain = signature('celery.chain', [], { tasks: [sig('proj.add', [1, 1]), sig('proj.mul', [10])] }) as unknown as Signature
    const app = replacingApp(() => chain)
    const { backend } = fakeBackend()
    const { runner, published } = setup(app, backend)
    const embed = { callbacks: [sig('proj.log')], errbacks: [sig('proj.err')], chain: [sig('proj.after', [2])] }
    await deliver(runner, deliveryOf('proj.rep', { id: ID, embed }))
    assert.equal(published.length, 1)
    const first = published[0]!
    assert.equal(first.task, 'proj.add')
    assert.notEqual(first.id, ID)
    assert.deepEqual(first.embed.errbacks, [sig('proj.err')])
    assert.equal(first.embed.callbacks, null)
    // The chain travels reversed: the next step last.
    const [after, mul] = first.embed.chain as Signature[]
    assert.deepEqual(after, sig('proj.after', [2]))
    assert.equal(mul!.task, 'proj.mul')
    assert.deepEqual(mul!.options, { task_id: ID, link: [sig('proj.log')], link_error: [sig('proj.err')] })
  })

  it("a group: a chord whose celery.accumulate body takes the id, and gives the list of the group's results", async () => {
    const group = signature('celery.group', [], { tasks: [sig('proj.add', [1, 1]), sig('proj.add', [2, 2])] }) as unknown as Signature
    const app = replacingApp(() => group)
    const { backend, sizes } = fakeBackend()
    const { runner, published } = setup(app, backend)
    await deliver(runner, deliveryOf('proj.rep', { id: ID, embed: { callbacks: [sig('proj.log')] } }))
    assert.equal(sizes.length, 1)
    assert.equal(sizes[0]!.size, 2)
    assert.deepEqual(
      published.map((p) => [p.task, p.args, p.group, p.groupIndex]),
      [
        ['proj.add', [1, 1], sizes[0]!.gid, 0],
        ['proj.add', [2, 2], sizes[0]!.gid, 1],
      ],
    )
    const body = published[0]!.embed.chord!
    assert.equal(body.task, 'celery.accumulate')
    assert.deepEqual(body.kwargs, { index: 0 })
    assert.equal(body.options.task_id, ID)
    assert.deepEqual(body.options.link, [sig('proj.log')])
  })

  it("refused in the task, as Celery's: a signature with a chord of its own, an empty chain", async () => {
    const app = createApp({ name: 'proj' })
    app.task('proj.chorded', () => currentTask().replace(sig('proj.add', [1, 1], { chord: sig('proj.tsum') })))
    app.task('proj.empty', () => currentTask().replace(signature('celery.chain', [], { tasks: [] }) as unknown as Signature))
    const { backend, stored } = fakeBackend()
    const { runner, published } = setup(app, backend)
    await deliver(runner, deliveryOf('proj.chorded'))
    await deliver(runner, deliveryOf('proj.empty'))
    assert.equal(published.length, 0)
    assert.deepEqual(
      stored.map((s) => s.meta.result),
      [
        {
          exc_type: 'ImproperlyConfigured',
          exc_message: ['A signature replacing a task must not be part of a chord'],
          exc_module: 'celery.exceptions',
        },
        { exc_type: 'ImproperlyConfigured', exc_message: ['Cannot replace with an empty chain'], exc_module: 'celery.exceptions' },
      ],
    )
  })

  it("a replacement delivered back to this worker at once runs (it is not a second copy), after the replaced run's own hooks", async () => {
    const app = replacingApp(() => sig('proj.add', [2, 3]))
    const seen: string[] = []
    app.on('task_postrun', ({ sender, taskId, state }) => void seen.push(`postrun ${sender}[${taskId}] ${state}`))
    const { backend, stored } = fakeBackend()
    const { runner, log } = setup(app, backend, 'amqp', true)
    await deliver(runner, deliveryOf('proj.rep', { id: ID }))
    await runner.idle()
    assert.deepEqual(
      stored.map((s) => [s.id, s.status, s.meta.result]),
      [[ID, 'SUCCESS', 5]],
      log.lines.join('\n'),
    )
    assert.deepEqual(seen, [`postrun proj.rep[${ID}] IGNORED`, `postrun proj.add[${ID}] SUCCESS`])
    assert.ok(!log.lines.some((l) => l.includes('delivered twice')), log.lines.join('\n'))
  })

  it("task_postrun says IGNORED, as after Celery's Ignore; no onSuccess", async () => {
    const app = replacingApp(() => sig('proj.add', [2, 3]))
    const seen: string[] = []
    app.tasks.get('proj.rep')!.options.onSuccess = () => void seen.push('onSuccess')
    app.on('task_postrun', ({ sender, state }) => void seen.push(`postrun ${sender} ${state}`))
    const { runner } = setup(app, fakeBackend().backend)
    await deliver(runner, deliveryOf('proj.rep', { id: ID }))
    assert.deepEqual(seen, ['postrun proj.rep IGNORED'])
  })
})

describe("[parity] a result that cannot be encoded runs the failure's hooks, as Celery's trace", () => {
  function hookedApp(seen: string[]) {
    const app = createApp({ name: 'proj' })
    app.task('proj.fn', () => ({ f: () => 1 }), {
      onSuccess: () => void seen.push('onSuccess'),
      onFailure: ({ exc }) => void seen.push(`onFailure ${(exc as Error).name}`),
      afterReturn: ({ status, retval }) => void seen.push(`afterReturn ${status} ${(retval as Error).name}`),
    })
    app.on('task_success', () => void seen.push('task_success'))
    app.on('task_failure', ({ exception }) => void seen.push(`task_failure ${(exception as Error).name}`))
    app.on('task_postrun', ({ state }) => void seen.push(`task_postrun ${state}`))
    return app
  }

  it("onFailure and task_failure with kombu's EncodeError, after the FAILURE is stored; never onSuccess", async () => {
    const seen: string[] = []
    const app = hookedApp(seen)
    const { backend, stored } = fakeBackend()
    const { runner, log } = setup(app, backend)
    const d = deliveryOf('proj.fn', { id: ID })
    await deliver(runner, d)
    assert.deepEqual(seen, ['onFailure EncodeError', 'task_failure EncodeError', 'afterReturn FAILURE EncodeError', 'task_postrun FAILURE'])
    assert.deepEqual(d.settled, ['ack'])
    assert.deepEqual(
      stored.map((s) => [s.status, s.meta.result]),
      [
        [
          'FAILURE',
          {
            exc_type: 'EncodeError',
            exc_message: ["TypeError('Object of type function is not JSON serializable')"],
            exc_module: 'kombu.exceptions',
          },
        ],
      ],
    )
    assert.ok(
      log.lines.some(
        (l) =>
          l === `ERROR Task proj.fn[${ID}] raised unexpected: EncodeError(TypeError('Object of type function is not JSON serializable'))`,
      ),
      log.lines.join('\n'),
    )
  })

  it('a slot that cannot hand its outcome over has its held hooks announce the failure it sends instead', () => {
    const seen: string[] = []
    const app = hookedApp(seen)
    app.task('proj.ok', () => ({ a: 1 }), {
      onSuccess: () => void seen.push('onSuccess'),
      onFailure: ({ exc }) => void seen.push(`onFailure ${(exc as Error).name}`),
    })
    const job: Job = {
      id: ID,
      task: 'proj.ok',
      args: [],
      kwargs: {},
      retries: 0,
      rootId: ID,
      parentId: null,
      group: null,
      hostname: 'h',
      softTimeLimit: null,
    }
    const running = executeJob(app, job, undefined, { holdEndHooks: true })
    const outcome = running.immediate!
    assert.equal(outcome.status, 'success')
    // A spread copy, as slot-main hands over a value with toJSON() applied.
    const sent = unsendableOutcome({ ...outcome }, new Error('could not be cloned'))
    assert.equal(sent.status, 'failure')
    running.releaseEndHooks()
    assert.deepEqual(seen, ['onFailure EncodeError', 'task_failure EncodeError', 'task_postrun FAILURE'])
  })
})

describe('[parity] task_internal_error', () => {
  it("a task handler that throws: sent where the task runs, with the task's request; the result stands", async () => {
    const app = createApp({ name: 'proj' })
    app.task('proj.add', (x: number, y: number) => x + y, {
      onSuccess: () => {
        throw new RangeError('handler bug')
      },
    })
    const seen: Array<Record<string, unknown>> = []
    app.on('task_internal_error', (payload) => void seen.push(payload as unknown as Record<string, unknown>))
    const { backend, stored } = fakeBackend()
    const { runner } = setup(app, backend)
    const error = console.error
    const reported: string[] = []
    console.error = (...args: unknown[]) => void reported.push(args.join(' '))
    try {
      await deliver(runner, deliveryOf('proj.add', { id: ID, args: [2, 3] }))
    } finally {
      console.error = error
    }
    assert.deepEqual(
      stored.map((s) => [s.status, s.meta.result]),
      [['SUCCESS', 5]],
    )
    assert.equal(seen.length, 1)
    const p = seen[0]!
    assert.deepEqual([p.sender, p.taskId, p.args, p.kwargs], ['proj.add', ID, [2, 3], {}])
    assert.equal((p.exception as Error).message, 'handler bug')
    assert.match(p.traceback as string, /RangeError: handler bug/)
    assert.equal((p.request as TaskContext).id, ID)
    assert.deepEqual(reported, ['Signal handler onSuccess for proj.add onSuccess raised: RangeError: handler bug'])
  })

  it('a result the worker cannot store: sent in the worker with the request as inspect shows it', async () => {
    const app = createApp({ name: 'proj' })
    app.task('proj.add', (x: number, y: number) => x + y)
    const seen: Array<Record<string, unknown>> = []
    app.on('task_internal_error', (payload) => void seen.push(payload as unknown as Record<string, unknown>))
    const { backend } = fakeBackend(true)
    const { runner } = setup(app, backend)
    await deliver(runner, deliveryOf('proj.add', { id: ID, args: [2, 3] }))
    assert.equal(seen.length, 1)
    assert.equal((seen[0]!.exception as Error).message, 'backend down')
    assert.equal((seen[0]!.request as { id: string }).id, ID)
  })
})
