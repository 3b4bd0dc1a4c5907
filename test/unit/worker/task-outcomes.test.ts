// What a task can decide about its own run, beyond returning or throwing:
// states of its own (updateState), retrying by itself on chosen errors
// (autoretryFor with backoff), and ending without a result (Ignore, Reject),
// as Celery's Task.update_state, autoretry_for, Ignore and Reject do.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { createApp, type App } from '../../../src/app/app.js'
import type { ResultBackend } from '../../../src/backends/index.js'
import { Logger } from '../../../src/process/logger.js'
import { currentTask, Ignore, Reject } from '../../../src/app/task-context.js'
import { taskDeliveryFields } from '../../helpers/deliveries.js'
import type { Delivery } from '../../../src/transport/index.js'
import type { EventDispatcher } from '../../../src/worker/events.js'
import { LimitedSet } from '../../../src/worker/control/limited-set.js'
import { autoretryOptions, executeJob, unsendableOutcome } from '../../../src/app/execution/executor.js'
import type { Job, Outcome } from '../../../src/app/execution/jobs.js'
import type { Pool } from '../../../src/worker/pools/pool.js'
import { SoloPool } from '../../../src/worker/pools/solo-pool.js'
import { TaskRunner } from '../../../src/worker/task-path/task-runner.js'

class RecordingLogger extends Logger {
  readonly lines: string[] = []
  override log(level: Parameters<Logger['log']>[0], message: string): void {
    this.lines.push(`${level} ${message}`)
  }
}

/** A backend that records each store, the first one held until `release()`. */
function recordingBackend() {
  const stored: Array<{ status: string; meta: Record<string, unknown> }> = []
  let release!: () => void
  const firstHeld = new Promise<void>((resolve) => (release = resolve))
  const backend = {
    displayUrl: 'test://',
    store: async (_id: string, json: string, status: string) => {
      if (stored.length === 0) await firstHeld
      stored.push({ status, meta: JSON.parse(json) as Record<string, unknown> })
    },
  } as unknown as ResultBackend
  return { backend, stored, release }
}

function delivery(taskName: string, args: unknown[] = [], options: { expires?: string } = {}) {
  const settled: string[] = []
  const d: Delivery & { settled: string[] } = {
    ...taskDeliveryFields(taskName, args, options),
    settled,
    ack: async () => {
      settled.push('ack')
    },
    reject: async ({ requeue }: { requeue: boolean }) => {
      settled.push(requeue ? 'requeue' : 'reject')
    },
  }
  return d
}

/** Delivers one message per task name, in order, then waits until the runner is idle; returns the deliveries. */
async function deliverAll(runner: TaskRunner, ...taskNames: string[]): Promise<Array<ReturnType<typeof delivery>>> {
  const deliveries = taskNames.map((name) => delivery(name))
  for (const d of deliveries) await runner.onDelivery(d)
  await runner.idle()
  return deliveries
}

function runnerFor(app: App, backend: ResultBackend | null, pool: Pool = new SoloPool(app, 2)) {
  const log = new RecordingLogger('INFO')
  const events: Array<[string, Record<string, unknown>]> = []
  const runner = new TaskRunner({
    app,
    transport: undefined as never,
    pool,
    backend,
    events: {
      taskEvents: true,
      sendTask: (type: string, fields: Record<string, unknown>) => events.push([type, fields]),
    } as unknown as EventDispatcher,
    revoked: new LimitedSet(),
    log,
    hostname: 'w@h',
    acksLate: true,
    timeLimit: null,
    softTimeLimit: null,
    onScheduledChange: () => undefined,
  })
  return { runner, log, events }
}

it('[outcomes] updateState stores the state and its meta, in order, and the end state after them', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.progress', async (total: number) => {
    const ctx = currentTask()
    for (let i = 1; i <= total; i++) await ctx.updateState('PROGRESS', { current: i, total })
    return 'done'
  })
  const { backend, stored, release } = recordingBackend()
  const { runner } = runnerFor(app, backend)
  const d = delivery('proj.progress', [2])
  await runner.onDelivery(d)
  setTimeout(release, 20)
  await runner.idle()
  assert.deepEqual(
    stored.map((s) => [s.status, s.meta.result]),
    [
      ['PROGRESS', { current: 1, total: 2 }],
      ['PROGRESS', { current: 2, total: 2 }],
      ['SUCCESS', 'done'],
    ],
  )
  // A state that is not ready has no date_done, as Celery's _get_result_meta writes it.
  assert.equal(stored[0]!.meta.date_done, null)
  assert.deepEqual(d.settled, ['ack'])
})

it('[outcomes] a task that does not await updateState still has its end state stored last', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.fire', () => {
    void currentTask().updateState('PROGRESS', { step: 1 })
    return 7
  })
  const { backend, stored, release } = recordingBackend()
  const { runner } = runnerFor(app, backend)
  await runner.onDelivery(delivery('proj.fire'))
  setTimeout(release, 20)
  await runner.idle()
  assert.deepEqual(
    stored.map((s) => s.status),
    ['PROGRESS', 'SUCCESS'],
  )
})

it('[outcomes] updateState refuses an empty state, and a meta that cannot be encoded fails only that call', async () => {
  const app = createApp({ name: 'proj' })
  const seen: string[] = []
  app.task('proj.bad', async () => {
    const ctx = currentTask()
    await ctx.updateState('').catch((e: Error) => seen.push(e.message))
    await ctx.updateState('PROGRESS', { callback: () => 1 }).catch((e: Error) => seen.push(e.message))
    return 'still fine'
  })
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner, log } = runnerFor(app, backend)
  await runner.onDelivery(delivery('proj.bad'))
  await runner.idle()
  assert.match(seen[0]!, /state must be a non-empty string/)
  assert.match(seen[1]!, /not JSON serializable/)
  assert.deepEqual(
    stored.map((s) => [s.status, s.meta.result]),
    [['SUCCESS', 'still fine']],
  )
  assert.ok(log.lines.some((l) => l.startsWith('ERROR Could not store the PROGRESS state of proj.bad[')))
})

it('[outcomes] result_extended: each stored state also carries name, args, kwargs, worker, retries and queue, before task_id', async () => {
  const app = createApp({ name: 'proj', conf: { result_extended: true } })
  app.task('proj.add', async (x: number, y: number) => {
    await currentTask().updateState('PROGRESS', { half: true })
    return x + y
  })
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner } = runnerFor(app, backend)
  await runner.onDelivery(delivery('proj.add', [2, 3]))
  await runner.idle()
  assert.deepEqual(
    stored.map((s) => s.status),
    ['PROGRESS', 'SUCCESS'],
  )
  for (const { meta } of stored) {
    assert.deepEqual(Object.keys(meta), [
      'status',
      'result',
      'traceback',
      'children',
      'date_done',
      'name',
      'args',
      'kwargs',
      'worker',
      'retries',
      'queue',
      'task_id',
    ])
    assert.deepEqual(
      [meta.name, meta.args, meta.kwargs, meta.worker, meta.retries, meta.queue],
      ['proj.add', [2, 3], {}, 'w@h', 0, 'celery'],
    )
  }
  // Off by default, as in Celery.
  const plain = createApp({ name: 'proj' })
  plain.task('proj.add', (x: number, y: number) => x + y)
  const second = recordingBackend()
  second.release()
  const { runner: plainRunner } = runnerFor(plain, second.backend)
  await plainRunner.onDelivery(delivery('proj.add', [2, 3]))
  await plainRunner.idle()
  assert.equal(second.stored[0]!.meta.name, undefined)
})

it("[outcomes] a result JSON cannot carry fails the task with kombu's EncodeError, acked once, as Celery's trace does; an error's unencodable argument is stored as its repr", async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.fn', () => ({ f: () => 1 }))
  app.task('proj.cycle', () => {
    const o: Record<string, unknown> = {}
    o.self = o
    return o
  })
  app.task('proj.badexc', () => {
    throw Object.assign(new Error('bad'), { args: ['bad', () => 2] })
  })
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner, log } = runnerFor(app, backend)
  const deliveries = await deliverAll(runner, 'proj.fn', 'proj.cycle', 'proj.badexc')
  assert.deepEqual(
    deliveries.map((d) => d.settled),
    [['ack'], ['ack'], ['ack']],
    'acked, not requeued into the same failure',
  )
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
      ['FAILURE', { exc_type: 'EncodeError', exc_message: ["ValueError('Circular reference detected')"], exc_module: 'kombu.exceptions' }],
      ['FAILURE', { exc_type: 'Exception', exc_message: ['bad', '<function>'], exc_module: 'builtins', exc_js_name: 'Error' }],
    ],
  )
  assert.ok(
    log.lines.some((l) =>
      /ERROR Task proj\.fn\[.*\] raised unexpected: EncodeError\(TypeError\('Object of type function is not JSON serializable'\)\)/.test(l),
    ),
    log.lines.join('\n'),
  )
})

it('[outcomes] a slot that cannot hand over its outcome sends the failure the worker would record', () => {
  const unsendable = unsendableOutcome(
    { status: 'success', value: { f: () => 1 }, runtime: 0.5 },
    new Error('() => 1 could not be cloned.'),
  )
  assert.deepEqual(unsendable, {
    status: 'failure',
    exc: {
      type: 'EncodeError',
      args: ["TypeError('Object of type function is not JSON serializable')"],
      module: 'kombu.exceptions',
      message: "TypeError('Object of type function is not JSON serializable')",
    },
    traceback: null,
    runtime: 0.5,
  })
  // Hooks the slot holds stay marked, so the worker still releases them.
  assert.equal(
    unsendableOutcome({ status: 'success', value: { f: () => 1 }, runtime: 0.5, endHooks: true }, new Error('could not be cloned'))
      .endHooks,
    true,
  )
  const failure = unsendableOutcome(
    {
      status: 'failure',
      exc: { type: 'Exception', args: ['bad', () => 2], module: 'builtins', message: 'bad' },
      traceback: 'tb',
      runtime: 0.1,
    },
    new Error('could not be cloned'),
  )
  assert.deepEqual(failure, {
    status: 'failure',
    exc: { type: 'Exception', args: ['bad', '<function>'], module: 'builtins', message: 'bad' },
    traceback: 'tb',
    runtime: 0.1,
  })
})

it('[outcomes] a task that expires while it waits behind a busy pool is revoked as expired when it would start, not run', async (t) => {
  // Expiry is read on Date.now(): a mocked clock moves past it without waiting.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() })
  const app = createApp({ name: 'proj' })
  let unblock!: () => void
  app.task('proj.block', () => new Promise<void>((resolve) => (unblock = resolve)))
  let ran = false
  app.task('proj.late', () => {
    ran = true
  })
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner, events } = runnerFor(app, backend, new SoloPool(app, 1))
  // Not awaited: each call's promise is its task's whole run.
  void runner.onDelivery(delivery('proj.block'))
  const late = delivery('proj.late', [], { expires: new Date(Date.now() + 100).toISOString() })
  void runner.onDelivery(late)
  t.mock.timers.tick(200)
  unblock()
  await runner.idle()
  assert.equal(ran, false)
  assert.deepEqual(late.settled, ['ack'])
  assert.deepEqual(
    stored.map((s) => [s.status, s.meta.result]),
    [
      ['SUCCESS', null],
      ['REVOKED', { exc_type: 'TaskRevokedError', exc_message: ['expired'], exc_module: 'celery.exceptions' }],
    ],
  )
  assert.ok(
    events.some(([type, fields]) => type === 'task-revoked' && fields.expired === true),
    JSON.stringify(events),
  )
})

it('[outcomes] Ignore acks the message and stores nothing', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.skip', () => {
    throw new Ignore()
  })
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner, log, events } = runnerFor(app, backend)
  const d = delivery('proj.skip')
  await runner.onDelivery(d)
  await runner.idle()
  assert.deepEqual(d.settled, ['ack'])
  assert.deepEqual(stored, [])
  assert.ok(log.lines.some((l) => /^INFO Task proj\.skip\[[0-9a-f-]+\] ignored$/.test(l)))
  assert.deepEqual(
    events.map(([type]) => type),
    ['task-received', 'task-started'],
  )
})

it('[outcomes] Reject drops or requeues the message, logs it as Celery does and sends task-rejected', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.drop', () => {
    throw new Reject('bad input')
  })
  app.task('proj.again', async () => {
    throw new Reject('later', { requeue: true })
  })
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner, log, events } = runnerFor(app, backend)
  const [drop, again] = await deliverAll(runner, 'proj.drop', 'proj.again')
  assert.deepEqual(drop.settled, ['reject'])
  assert.deepEqual(again.settled, ['requeue'])
  assert.deepEqual(stored, [])
  assert.ok(log.lines.some((l) => /^WARNING Task proj\.drop\[[0-9a-f-]+\] reject requeue=False: bad input$/.test(l)))
  assert.ok(log.lines.some((l) => /^WARNING Task proj\.again\[[0-9a-f-]+\] reject requeue=True: later$/.test(l)))
  assert.deepEqual(
    events.filter(([type]) => type === 'task-rejected').map(([, f]) => f.requeue),
    [false, true],
  )
})

// ---- autoretry -------------------------------------------------------------

const job = (retries = 0): Job => ({
  id: 'id-1',
  task: 't.run',
  args: [],
  kwargs: {},
  retries,
  rootId: null,
  parentId: null,
  group: null,
  hostname: 'w@h',
  softTimeLimit: null,
})

function appWith(fn: () => unknown, options: Record<string, unknown>): App {
  const app = createApp({ name: 'proj' })
  app.task('t.run', fn, options)
  return app
}

class FetchError extends Error {
  override name = 'FetchError'
}
class TimeoutFetchError extends FetchError {}

it('[outcomes] an error listed in autoretryFor becomes a retry carrying it and retryKwargs; others fail', async () => {
  const options = { autoretryFor: [TypeError, 'FetchError'], retryKwargs: { countdown: 7, maxRetries: 5 } }
  const typeError = await executeJob(
    appWith(() => {
      throw new TypeError('bad')
    }, options),
    job(),
  ).outcome
  assert.equal(typeError.status, 'retry')
  assert.ok(typeError.status === 'retry')
  assert.equal(typeError.countdown, 7)
  assert.equal(typeError.maxRetries, 5)
  assert.deepEqual(typeError.exc, { type: 'TypeError', args: ['bad'], module: 'builtins', message: 'bad' })
  // By name: the error's own class or any class it inherits from.
  const subclass = await executeJob(
    appWith(async () => {
      throw new TimeoutFetchError('slow')
    }, options),
    job(),
  ).outcome
  assert.equal(subclass.status, 'retry')
  const reset = await executeJob(
    appWith(
      () => {
        throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
      },
      { autoretryFor: ['ECONNRESET'] },
    ),
    job(),
  ).outcome
  assert.equal(reset.status, 'retry')
  const other = await executeJob(
    appWith(() => {
      throw new RangeError('no')
    }, options),
    job(),
  ).outcome
  assert.equal(other.status, 'failure')
  // Ignore is never retried, even when autoretryFor would match it (Celery re-raises Ignore and Retry first).
  const ignored = await executeJob(
    appWith(
      () => {
        throw new Ignore()
      },
      { autoretryFor: [Error] },
    ),
    job(),
  ).outcome
  assert.equal(ignored.status, 'ignored')
})

it('[outcomes] retryBackoff doubles per retry up to retryBackoffMax; retryJitter draws a whole number up to it', () => {
  const task = (options: Record<string, unknown>) => appWith(() => undefined, { autoretryFor: [Error], ...options }).tasks.get('t.run')!
  const error = new Error('x')
  const noJitter = task({ retryBackoff: true, retryJitter: false })
  assert.deepEqual(
    [0, 1, 2, 3, 12].map((r) => autoretryOptions(noJitter, error, r)!.countdown),
    [1, 2, 4, 8, 600],
  )
  const factor = task({ retryBackoff: 3, retryBackoffMax: 20, retryJitter: false })
  assert.deepEqual(
    [0, 1, 2, 3].map((r) => autoretryOptions(factor, error, r)!.countdown),
    [3, 6, 12, 20],
  )
  // Jitter is on by default: random.randrange(countdown + 1).
  const jitter = task({ retryBackoff: true })
  assert.equal(autoretryOptions(jitter, error, 3, () => 0)!.countdown, 0)
  assert.equal(autoretryOptions(jitter, error, 3, () => 0.999)!.countdown, 8)
  // Without backoff the countdown is retryKwargs' (or the task's default delay, decided later).
  assert.equal(autoretryOptions(task({}), error, 3)!.countdown, undefined)
  // A thrown non-Error is not an instance of Error.
  assert.equal(autoretryOptions(task({}), 'not an error', 0), undefined)
})

// ---- task signals ----------------------------------------------------------

function signalled(fn: (...args: any[]) => unknown, options: Record<string, unknown> = {}) {
  const app = createApp({ name: 'proj' })
  app.task('t.run', fn, options)
  const seen: Array<[string, Record<string, unknown>]> = []
  for (const name of ['task_prerun', 'task_postrun', 'task_success', 'task_failure', 'task_retry'] as const) {
    app.on(name, (payload) => {
      seen.push([name, payload as Record<string, unknown>])
    })
  }
  return { app, seen }
}

it('[signals] a success sends task_prerun, task_success, then task_postrun with the return value and SUCCESS', async () => {
  const { app, seen } = signalled((x: number) => x * 2)
  const outcome = await executeJob(app, { ...job(), args: [21] }).outcome
  assert.equal(outcome.status, 'success')
  assert.deepEqual(
    seen.map(([name]) => name),
    ['task_prerun', 'task_success', 'task_postrun'],
  )
  assert.deepEqual(seen[0]![1], { sender: 't.run', taskId: 'id-1', args: [21], kwargs: {}, headers: {} })
  assert.deepEqual(seen[1]![1], { sender: 't.run', taskId: 'id-1', result: 42 })
  assert.deepEqual(seen[2]![1], { sender: 't.run', taskId: 'id-1', args: [21], kwargs: {}, retval: 42, state: 'SUCCESS' })
})

it('[signals] a failure sends task_failure with the error itself; a retry sends task_retry, and past the limit task_failure', async () => {
  const boom = new TypeError('boom')
  const failing = signalled(async () => {
    throw boom
  })
  await executeJob(failing.app, job()).outcome
  assert.deepEqual(
    failing.seen.map(([name]) => name),
    ['task_prerun', 'task_failure', 'task_postrun'],
  )
  assert.equal(failing.seen[1]![1].exception, boom)
  assert.match(String(failing.seen[1]![1].traceback), /TypeError: boom/)
  assert.equal(failing.seen[2]![1].state, 'FAILURE')

  const retrying = signalled(() => currentTask().retry({ exc: boom, maxRetries: 2 }))
  await executeJob(retrying.app, job(1)).outcome
  assert.deepEqual(
    retrying.seen.map(([name]) => name),
    ['task_prerun', 'task_retry', 'task_postrun'],
  )
  assert.deepEqual(retrying.seen[1]![1], { sender: 't.run', taskId: 'id-1', retries: 1, reason: boom })
  assert.equal(retrying.seen[2]![1].state, 'RETRY')
  retrying.seen.length = 0
  await executeJob(retrying.app, job(2)).outcome
  assert.deepEqual(
    retrying.seen.map(([name]) => name),
    ['task_prerun', 'task_failure', 'task_postrun'],
  )
  assert.equal(retrying.seen[2]![1].state, 'FAILURE')

  const ignoring = signalled(() => {
    throw new Ignore()
  })
  await executeJob(ignoring.app, job()).outcome
  assert.deepEqual(
    ignoring.seen.map(([name, p]) => `${name}${p.state ? ` ${String(p.state)}` : ''}`),
    ['task_prerun', 'task_postrun IGNORED'],
  )
})

it("[signals] in the worker the end handlers and signals run after the result is stored, as Celery's trace stores it first", async () => {
  const app = createApp({ name: 'proj' })
  const { backend, stored, release } = recordingBackend()
  release()
  const seen: string[] = []
  const sawStored = (what: string) => () => void seen.push(`${what} saw ${stored.map((s) => s.status).join(',') || 'nothing'}`)
  const handlers = { onSuccess: sawStored('onSuccess'), onFailure: sawStored('onFailure'), afterReturn: sawStored('afterReturn') }
  app.task('proj.ok', () => 1, handlers)
  app.task('proj.later', async () => 2, handlers)
  app.task(
    'proj.bad',
    () => {
      throw new Error('no')
    },
    handlers,
  )
  app.on('task_success', sawStored('task_success'))
  app.on('task_failure', sawStored('task_failure'))
  app.on('task_postrun', sawStored('task_postrun'))
  const { runner } = runnerFor(app, backend)
  await deliverAll(runner, 'proj.ok')
  assert.deepEqual(seen.splice(0), [
    'onSuccess saw SUCCESS',
    'task_success saw SUCCESS',
    'afterReturn saw SUCCESS',
    'task_postrun saw SUCCESS',
  ])
  await deliverAll(runner, 'proj.later')
  assert.deepEqual(seen.splice(0), [
    'onSuccess saw SUCCESS,SUCCESS',
    'task_success saw SUCCESS,SUCCESS',
    'afterReturn saw SUCCESS,SUCCESS',
    'task_postrun saw SUCCESS,SUCCESS',
  ])
  await deliverAll(runner, 'proj.bad')
  assert.deepEqual(seen.splice(0), [
    'onFailure saw SUCCESS,SUCCESS,FAILURE',
    'task_failure saw SUCCESS,SUCCESS,FAILURE',
    'afterReturn saw SUCCESS,SUCCESS,FAILURE',
    'task_postrun saw SUCCESS,SUCCESS,FAILURE',
  ])
})

it('[signals] a receiver that throws is reported and the task still succeeds; on() returns a disconnect; unknown names are refused', async () => {
  const app = createApp({ name: 'proj' })
  app.task('t.run', () => 'ok')
  const calls: string[] = []
  app.on('task_prerun', function brokenReceiver() {
    throw new Error('receiver bug')
  })
  const off = app.on('task_success', () => {
    calls.push('success')
  })
  const reported: string[] = []
  const original = console.error
  console.error = (message: string) => reported.push(message)
  try {
    const outcome = await executeJob(app, job()).outcome
    assert.equal(outcome.status, 'success')
    off()
    await executeJob(app, job()).outcome
  } finally {
    console.error = original
  }
  assert.deepEqual(reported, [
    'Signal handler brokenReceiver for task_prerun raised: Error: receiver bug',
    'Signal handler brokenReceiver for task_prerun raised: Error: receiver bug',
  ])
  assert.deepEqual(calls, ['success'])
  assert.throws(() => app.on('task_nope' as 'task_prerun', () => undefined), /unknown signal "task_nope"/)
})

it("[handlers] beforeStart, onSuccess / onFailure / onRetry and afterReturn run around the task in Celery's trace order, between the signals", async () => {
  const order: string[] = []
  const handlers = {
    beforeStart: ({ taskId }: { taskId: string }) => order.push(`beforeStart ${taskId}`),
    onSuccess: ({ retval }: { retval: unknown }) => order.push(`onSuccess ${String(retval)}`),
    onFailure: ({ exc }: { exc: unknown }) => order.push(`onFailure ${(exc as Error).message}`),
    onRetry: ({ exc }: { exc: unknown }) => order.push(`onRetry ${(exc as Error).message}`),
    afterReturn: ({ status }: { status: string }) => order.push(`afterReturn ${status}`),
  }
  const run = async (fn: (...args: any[]) => unknown, retries = 0): Promise<string[]> => {
    order.length = 0
    const app = createApp({ name: 'proj' })
    app.task('t.run', fn, handlers)
    for (const name of ['task_prerun', 'task_success', 'task_failure', 'task_retry', 'task_postrun'] as const)
      app.on(name, () => void order.push(name))
    await executeJob(app, job(retries)).outcome
    return [...order]
  }
  assert.deepEqual(await run(() => 5), [
    'beforeStart id-1',
    'task_prerun',
    'onSuccess 5',
    'task_success',
    'afterReturn SUCCESS',
    'task_postrun',
  ])
  assert.deepEqual(
    await run(() => {
      throw new Error('bad')
    }),
    ['beforeStart id-1', 'task_prerun', 'onFailure bad', 'task_failure', 'afterReturn FAILURE', 'task_postrun'],
  )
  // A retry has no afterReturn, as Celery's IGNORE_STATES.
  assert.deepEqual(await run(() => currentTask().retry({ exc: new Error('again') })), [
    'beforeStart id-1',
    'task_prerun',
    'onRetry again',
    'task_retry',
    'task_postrun',
  ])
  assert.deepEqual(await run(() => currentTask().retry({ exc: new Error('again') }), 3), [
    'beforeStart id-1',
    'task_prerun',
    'onFailure again',
    'task_failure',
    'afterReturn FAILURE',
    'task_postrun',
  ])
})

it('[handlers] a task with handlers and no signal receivers still gets them; a throwing handler changes nothing', async () => {
  const app = createApp({ name: 'proj' })
  const calls: string[] = []
  app.task('t.run', () => 'fine', {
    onSuccess: () => {
      calls.push('onSuccess')
      throw new Error('handler bug')
    },
    afterReturn: () => void calls.push('afterReturn'),
  })
  const reported: string[] = []
  const original = console.error
  console.error = (message: string) => reported.push(message)
  let outcome
  try {
    outcome = await executeJob(app, job()).outcome
  } finally {
    console.error = original
  }
  assert.deepEqual(outcome, { ...outcome, status: 'success', value: 'fine' })
  assert.deepEqual(calls, ['onSuccess', 'afterReturn'])
  assert.deepEqual(reported, ['Signal handler onSuccess for t.run onSuccess raised: Error: handler bug'])
})

it('[signals] the runner sends task_received for an accepted message, task_revoked for a revoked or expired one, task_rejected for an unreadable one', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.add', (x: number, y: number) => x + y)
  const seen: string[] = []
  app.on(
    'task_received',
    ({ sender, request }) => void seen.push(`received ${sender} ${String(request.name)} ${JSON.stringify(request.args)}`),
  )
  app.on(
    'task_revoked',
    ({ sender, terminated, expired }) => void seen.push(`revoked ${sender} terminated=${terminated} expired=${expired}`),
  )
  app.on('task_rejected', ({ exc, message }) => void seen.push(`rejected ${message.body.length > 0} ${exc.message.split(':')[0]}`))
  const { runner } = runnerFor(app, null)
  await runner.onDelivery(delivery('proj.add', [1, 2]))
  const expiredFields = taskDeliveryFields('proj.add', [3, 4])
  const headers = { ...(expiredFields.properties.headers as Record<string, unknown>), expires: new Date(Date.now() - 1000).toISOString() }
  await runner.onDelivery({
    ...expiredFields,
    properties: { ...expiredFields.properties, headers },
    ack: async () => undefined,
    reject: async () => undefined,
  })
  await runner.onDelivery({
    ...taskDeliveryFields('proj.add'),
    body: Buffer.from('{not json'),
    ack: async () => undefined,
    reject: async () => undefined,
  })
  await runner.idle()
  assert.equal(seen.length, 3, JSON.stringify(seen))
  assert.equal(seen[0], 'received w@h proj.add [1,2]')
  assert.equal(seen[1], 'revoked proj.add terminated=false expired=true')
  assert.match(seen[2]!, /^rejected true /)
})

// ---- Celery's task_* settings ------------------------------------------------

it("[conf] task_* settings are every task's defaults; an option given to app.task() wins", () => {
  const app = createApp({
    name: 'proj',
    conf: {
      task_default_rate_limit: '5/s',
      task_ignore_result: true,
      task_track_started: true,
      task_default_retry_delay: 30,
      task_acks_on_failure_or_timeout: false,
      task_reject_on_worker_lost: false,
    },
  })
  const plain = app.task('proj.plain', () => 1)
  const own = app.task('proj.own', () => 1, { rateLimit: '1/m', ignoreResult: false })
  assert.deepEqual(plain.options, {
    rateLimit: '5/s',
    ignoreResult: true,
    trackStarted: true,
    defaultRetryDelay: 30,
    acksOnFailureOrTimeout: false,
    rejectOnWorkerLost: false,
  })
  assert.equal(own.options.rateLimit, '1/m')
  assert.equal(own.options.ignoreResult, false)
  assert.equal(own.options.trackStarted, true)
})

it('[conf] acksOnFailureOrTimeout false rejects a failed late-ack message without requeue; by default it is acked', async () => {
  const app = createApp({ name: 'proj' })
  app.task(
    'proj.bad',
    () => {
      throw new Error('no')
    },
    { acksOnFailureOrTimeout: false },
  )
  app.task('proj.badacked', () => {
    throw new Error('no')
  })
  const { runner } = runnerFor(app, null)
  const [rejected, acked] = await deliverAll(runner, 'proj.bad', 'proj.badacked')
  assert.deepEqual(rejected.settled, ['reject'])
  assert.deepEqual(acked.settled, ['ack'])
})

it('[conf] rejectOnWorkerLost false: a lost pool process fails the task with WorkerLostError and the message is not requeued', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.lost', () => 1, { rejectOnWorkerLost: false })
  app.task('proj.requeued', () => 1)
  const lostPool: Pool = {
    kind: 'prefork',
    size: 2,
    start: async () => undefined,
    run: async () => ({ status: 'killed' as const, reason: 'worker-lost' as const, signal: 'SIGKILL', runtime: 0.1 }),
    afterStored: () => undefined,
    terminate: () => false,
    abort: () => undefined,
    grow: async () => undefined,
    shrink: async () => undefined,
    slots: () => [],
    close: async () => undefined,
  }
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner, log } = runnerFor(app, backend, lostPool)
  const [lost, requeued] = await deliverAll(runner, 'proj.lost', 'proj.requeued')
  assert.deepEqual(lost.settled, ['ack'])
  assert.deepEqual(requeued.settled, ['requeue'])
  assert.deepEqual(
    stored.map((s) => [s.status, s.meta.result]),
    [
      [
        'FAILURE',
        { exc_type: 'WorkerLostError', exc_message: ['Worker exited prematurely: signal 9 (SIGKILL).'], exc_module: 'billiard.exceptions' },
      ],
    ],
  )
  assert.ok(log.lines.includes("ERROR Task handler raised error: WorkerLostError('Worker exited prematurely: signal 9 (SIGKILL).')"))
})

// ---- settlement by the decision table (settlement.ts) ---------------------------

/** A pool whose every run ends as `end` says (by task name), after a turn. */
function poolEnding(end: (task: string) => Outcome): Pool {
  return {
    kind: 'prefork',
    size: 2,
    start: async () => undefined,
    run: async (job) => end(job.task),
    afterStored: () => undefined,
    terminate: () => false,
    abort: () => undefined,
    grow: async () => undefined,
    shrink: async () => undefined,
    slots: () => [],
    close: async () => undefined,
  }
}

it('[settlement] out of retries under acksOnFailureOrTimeout false: the task fails and its late-ack message is rejected, as Celery settles MaxRetriesExceededError', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.spent', () => 1, { acksOnFailureOrTimeout: false })
  app.task('proj.spentacked', () => 1)
  const retryPastLimit: Outcome = { status: 'retry', countdown: null, eta: null, maxRetries: 0, exc: null, runtime: 0 }
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner } = runnerFor(
    app,
    backend,
    poolEnding(() => retryPastLimit),
  )
  const [rejected, acked] = await deliverAll(runner, 'proj.spent', 'proj.spentacked')
  assert.deepEqual(rejected.settled, ['reject'])
  assert.deepEqual(acked.settled, ['ack'])
  assert.deepEqual(
    stored.map((s) => [s.status, (s.meta.result as { exc_type: string }).exc_type]),
    [
      ['FAILURE', 'MaxRetriesExceededError'],
      ['FAILURE', 'MaxRetriesExceededError'],
    ],
  )
})

it('[settlement] a hard time limit under acksOnFailureOrTimeout false rejects the late-ack message; by default it is acked', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.slow', () => 1, { acksOnFailureOrTimeout: false, timeLimit: 2 })
  app.task('proj.slowacked', () => 1, { timeLimit: 2 })
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner } = runnerFor(
    app,
    backend,
    poolEnding(() => ({ status: 'killed', reason: 'time-limit', signal: 'SIGKILL', runtime: 2 })),
  )
  const [rejected, acked] = await deliverAll(runner, 'proj.slow', 'proj.slowacked')
  assert.deepEqual(rejected.settled, ['reject'])
  assert.deepEqual(acked.settled, ['ack'])
  assert.deepEqual(
    stored.map((s) => s.meta.result),
    [1, 1].map(() => ({ exc_type: 'TimeLimitExceeded', exc_message: [2], exc_module: 'celery.exceptions' })),
  )
})

it('[settlement] under early ack a lost pool process fails the task with WorkerLostError: its message went when it started, nothing is requeued', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.early', () => 1, { acksLate: false })
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner, log } = runnerFor(
    app,
    backend,
    poolEnding(() => ({ status: 'killed', reason: 'worker-lost', signal: 'SIGKILL', runtime: 0.1 })),
  )
  const [d] = await deliverAll(runner, 'proj.early')
  assert.deepEqual(d!.settled, ['ack'], 'acked once, when it started')
  assert.deepEqual(
    stored.map((s) => s.status),
    ['FAILURE'],
  )
  assert.ok(
    log.lines.includes("ERROR Task handler raised error: WorkerLostError('Worker exited prematurely: signal 9 (SIGKILL).')"),
    log.lines.join('\n'),
  )
  assert.ok(!log.lines.some((l) => /requeued/.test(l)), 'not said to be requeued')
})

it("[settlement] a terminated (revoked) task is acked under a late ack whatever acksOnFailureOrTimeout says, as Celery's _announce_revoked", async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.killed', () => 1, { acksOnFailureOrTimeout: false })
  const { runner } = runnerFor(
    app,
    null,
    poolEnding(() => ({ status: 'killed', reason: 'terminated', signal: 'SIGTERM', runtime: 0.1 })),
  )
  const [d] = await deliverAll(runner, 'proj.killed')
  assert.deepEqual(d!.settled, ['ack'])
})

it("[settlement] a cold shutdown hands the running tasks' messages back (requeued) and ignores their outcomes", async () => {
  const app = createApp({ name: 'proj' })
  let finish!: () => void
  app.task('proj.long', () => new Promise<void>((resolve) => (finish = resolve)))
  const { backend, stored, release } = recordingBackend()
  release()
  const { runner, events } = runnerFor(app, backend)
  const d = delivery('proj.long')
  void runner.onDelivery(d)
  assert.equal(runner.active.size, 1)
  const { requests, handedBack } = runner.handBackRunning()
  assert.deepEqual(
    requests.map((r) => r.name),
    ['proj.long'],
  )
  await handedBack
  assert.deepEqual(d.settled, ['requeue'])
  finish()
  await runner.idle()
  assert.deepEqual(d.settled, ['requeue'], 'not settled again when the run ends')
  assert.deepEqual(stored, [])
  assert.ok(events.some(([type]) => type === 'task-cancelled'))
})
