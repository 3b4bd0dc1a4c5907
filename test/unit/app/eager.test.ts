// Tasks run in-process with no broker, as Celery users test theirs:
// `task.apply()` and `task_always_eager` (celery/app/task.py apply(),
// celery/result.py EagerResult, celery/canvas.py chain/group/chord apply()).
// Every app here has a transport that fails: nothing may reach a broker.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createApp, type App } from '../../../src/app/app.js'
import { AsyncResult, GroupResult } from '../../../src/app/async-result.js'
import { EagerResult } from '../../../src/app/eager.js'
import { currentTask, Ignore, Reject, type TaskContext } from '../../../src/app/task-context.js'
import { EncodeError } from '../../../src/protocol/index.js'

function brokerless(conf: Record<string, unknown> = {}): App {
  const app = createApp({ name: 'proj', conf })
  app.transport = async () => {
    throw new Error('no broker in an eager test')
  }
  return app
}

function eagerApp(conf: Record<string, unknown> = {}): App {
  return brokerless({ task_always_eager: true, ...conf })
}

describe('[eager] task.apply()', () => {
  it("runs the task here and gives an EagerResult, as Celery's apply()", async () => {
    const app = brokerless()
    const add = app.task('proj.add', (x: number, y: number) => x + y)
    const r = await add.apply([2, 2])
    assert.ok(r instanceof EagerResult)
    assert.ok(r instanceof AsyncResult, 'an EagerResult stands where an AsyncResult does')
    assert.match(r.id, /^[0-9a-f-]{36}$/)
    assert.equal(r.status, 'SUCCESS')
    assert.equal(r.result, 4)
    assert.equal(await r.state, 'SUCCESS')
    assert.equal(await r.get(), 4)
    assert.equal(await r.info, 4)
    assert.equal(await r.ready(), true)
    assert.equal(await r.successful(), true)
    assert.equal(await r.failed(), false)
    assert.equal(await r.traceback, null)
    assert.ok((await r.dateDone) instanceof Date)
  })

  it('takes the id, kwargs, retries and headers it is given; currentTask() sees them', async () => {
    const app = brokerless()
    let seen: TaskContext | undefined
    const t = app.task('proj.ctx', (x: number) => {
      seen = currentTask()
      return x
    })
    const r = await t.apply([1], { k: 'v' }, { id: 'task-1', retries: 2, headers: { trace: 'abc' } })
    assert.equal(r.id, 'task-1')
    assert.ok(seen)
    assert.equal(seen.id, 'task-1')
    assert.equal(seen.name, 'proj.ctx')
    assert.deepEqual(seen.args, [1])
    assert.deepEqual(seen.kwargs, { k: 'v' })
    assert.equal(seen.retries, 2)
    assert.equal(seen.rootId, 'task-1')
    assert.equal(seen.parentId, null)
    assert.deepEqual(seen.headers, { trace: 'abc' })
    assert.equal(typeof seen.hostname, 'string')
    assert.ok(seen.signal instanceof AbortSignal)
  })

  it('passes the context first with bind, and waits for an async task', async () => {
    const app = brokerless()
    const t = app.task(
      'proj.bound',
      async (self: TaskContext, x: number) => {
        await new Promise((resolve) => setTimeout(resolve, 5))
        return `${self.name}:${x}`
      },
      { bind: true },
    )
    assert.equal((await t.apply([7])).result, 'proj.bound:7')
  })

  it('a failure is a FAILURE result holding the error itself; get() rejects with it, propagate: false returns it', async () => {
    const app = brokerless()
    class PaymentError extends Error {
      constructor(readonly code: number) {
        super(`declined ${code}`)
        this.name = 'PaymentError'
      }
    }
    const pay = app.task('proj.pay', () => {
      throw new PaymentError(402)
    })
    const r = await pay.apply()
    assert.equal(r.status, 'FAILURE')
    assert.ok(r.result instanceof PaymentError)
    assert.equal(await r.failed(), true)
    assert.equal(await r.successful(), false)
    assert.equal(await r.ready(), true)
    assert.match((await r.traceback) ?? '', /PaymentError: declined 402/)
    await assert.rejects(r.get(), (e: unknown) => e instanceof PaymentError && e.code === 402)
    assert.equal(await r.get({ propagate: false }), r.result)
  })

  it("throws from apply() itself with { throw: true } or task_eager_propagates, as Celery's throw", async () => {
    const app = brokerless()
    const boom = app.task('proj.boom', (m: string) => {
      throw new TypeError(m)
    })
    await assert.rejects(boom.apply(['a'], {}, { throw: true }), { name: 'TypeError', message: 'a' })
    app.conf.task_eager_propagates = true
    await assert.rejects(boom.apply(['b']), { name: 'TypeError', message: 'b' })
    const r = await boom.apply(['c'], {}, { throw: false })
    assert.equal(r.status, 'FAILURE')
  })

  it('Ignore and Reject end as IGNORED and REJECTED, whose get() is null, never thrown', async () => {
    const app = brokerless({ task_eager_propagates: true })
    const ignored = await app
      .task('proj.ign', () => {
        throw new Ignore()
      })
      .apply()
    assert.equal(ignored.status, 'IGNORED')
    assert.equal(await ignored.get(), null)
    const rejected = await app
      .task('proj.rej', () => {
        throw new Reject('no')
      })
      .apply()
    assert.equal(rejected.status, 'REJECTED')
    assert.equal(await rejected.get(), null)
  })

  it("revoke() marks it REVOKED, whose get() throws, as Celery's EagerResult", async () => {
    const app = brokerless()
    const r = await app.task('proj.v', () => 1).apply()
    await r.revoke()
    assert.equal(r.status, 'REVOKED')
    await assert.rejects(r.get())
  })
})

describe('[eager] retries', () => {
  it('retry() runs the task again at once with retries + 1 and the same id, whatever the countdown', async () => {
    const app = brokerless()
    const seen: Array<[string, number]> = []
    const flaky = app.task('proj.flaky', () => {
      const ctx = currentTask()
      seen.push([ctx.id, ctx.retries])
      if (ctx.retries < 2) ctx.retry({ countdown: 3600, exc: new Error('later') })
      return 'done'
    })
    const started = Date.now()
    const r = await flaky.apply([], {}, { id: 'r-1' })
    assert.ok(Date.now() - started < 1000)
    assert.equal(r.status, 'SUCCESS')
    assert.equal(r.result, 'done')
    assert.deepEqual(seen, [
      ['r-1', 0],
      ['r-1', 1],
      ['r-1', 2],
    ])
  })

  it("past maxRetries the task fails with the retry's exc, after maxRetries + 1 runs, as Celery", async () => {
    const app = brokerless()
    let runs = 0
    const never = app.task(
      'proj.never',
      () => {
        runs += 1
        currentTask().retry({ exc: new RangeError('still down') })
      },
      { maxRetries: 2 },
    )
    const r = await never.apply()
    assert.equal(runs, 3)
    assert.equal(r.status, 'FAILURE')
    assert.ok(r.result instanceof RangeError)
    await assert.rejects(r.get(), RangeError)
  })

  it('without exc, past the limit it fails with MaxRetriesExceededError', async () => {
    const app = brokerless()
    const r = await app.task('proj.noexc', (_x: number) => currentTask().retry({ maxRetries: 1 })).apply([5])
    assert.equal(r.status, 'FAILURE')
    assert.equal((r.result as Error).name, 'MaxRetriesExceededError')
    assert.match((r.result as Error).message, /^Can't retry proj\.noexc\[.+\] args:\(5,\) kwargs:\{\}$/)
  })

  it('autoretryFor retries at once too, and a propagating apply() throws only the last failure', async () => {
    const app = brokerless({ task_eager_propagates: true })
    let runs = 0
    const fetchy = app.task(
      'proj.fetchy',
      () => {
        runs += 1
        throw Object.assign(new Error('reset'), { code: 'ECONNRESET' })
      },
      { autoretryFor: ['ECONNRESET'], retryKwargs: { maxRetries: 3 }, retryBackoff: true },
    )
    await assert.rejects(fetchy.apply(), { message: 'reset' })
    assert.equal(runs, 4)
  })
})

describe('[eager] signals and handlers, as in a worker', () => {
  it("sends task_prerun, task_retry, task_success, task_postrun and calls the handlers in Celery's trace order", async () => {
    const app = brokerless()
    const log: string[] = []
    for (const name of ['task_prerun', 'task_postrun', 'task_success', 'task_failure', 'task_retry'] as const) {
      app.on(name, (p) => log.push(`${name}${'state' in p ? `:${p.state}` : ''}`))
    }
    const t = app.task(
      'proj.t',
      () => {
        log.push('run')
        if (currentTask().retries === 0) currentTask().retry()
        return 1
      },
      {
        beforeStart: () => log.push('beforeStart'),
        onRetry: () => log.push('onRetry'),
        onSuccess: () => log.push('onSuccess'),
        afterReturn: ({ status }) => log.push(`afterReturn:${status}`),
      },
    )
    await t.apply()
    assert.deepEqual(log, [
      'beforeStart',
      'task_prerun',
      'run',
      'onRetry',
      'task_retry',
      'task_postrun:RETRY',
      'beforeStart',
      'task_prerun',
      'run',
      'onSuccess',
      'task_success',
      'afterReturn:SUCCESS',
      'task_postrun:SUCCESS',
    ])
  })

  it('a failure calls onFailure and task_failure with the error; a link_error runs before them', async () => {
    const app = eagerApp()
    const log: string[] = []
    app.on('task_failure', ({ exception }) => log.push(`task_failure:${(exception as Error).message}`))
    app.task('proj.errback', (id: string) => log.push(`errback:${id}`))
    const t = app.task(
      'proj.f',
      () => {
        throw new Error('bad')
      },
      { onFailure: ({ exc }) => log.push(`onFailure:${(exc as Error).message}`) },
    )
    await t.apply([], {}, { id: 'f-1', linkError: app.tasks.get('proj.errback')!.s() })
    assert.deepEqual(log, ['errback:f-1', 'onFailure:bad', 'task_failure:bad'])
  })
})

describe('[eager] task_always_eager', () => {
  it('delay(), applyAsync() and sendTask() of a registered task run here and give EagerResults', async () => {
    const app = eagerApp()
    const add = app.task('proj.add', (x: number, y: number) => x + y)
    const a = await add.delay(2, 3)
    const b = await add.applyAsync([4, 5], {}, { id: 'given', countdown: 60 })
    const c = await app.sendTask('proj.add', [1, 1])
    assert.ok(a instanceof EagerResult && b instanceof EagerResult && c instanceof EagerResult)
    assert.deepEqual([await a.get(), await b.get(), await c.get()], [5, 9, 2])
    assert.equal(b.id, 'given')
  })

  it("can be switched on in a test's set-up through app.conf", async () => {
    const app = brokerless()
    const add = app.task('proj.add', (x: number, y: number) => x + y)
    await assert.rejects(add.delay(1, 1), /no broker/)
    app.conf.task_always_eager = true
    assert.equal(await (await add.delay(1, 1)).get(), 2)
  })

  it('sendTask() of a name the app does not have is sent as ever', async () => {
    const app = eagerApp()
    await assert.rejects(app.sendTask('other.service.task', []), /no broker/)
  })

  it('the arguments reach the task as a worker would get them: through the serializer', async () => {
    const app = eagerApp()
    const echo = app.task('proj.echo', (value: unknown) => value)
    assert.equal(await (await echo.delay(new Date('2024-01-02T03:04:05Z'))).get(), '2024-01-02T03:04:05Z')
    await assert.rejects(
      echo.delay(() => 1),
      EncodeError,
    )
    // apply() passes them as they are, as Celery's does.
    const fn = () => 1
    assert.equal((await echo.apply([fn])).result, fn)
  })

  it('a failure rejects get(), or delay() itself with task_eager_propagates', async () => {
    const app = eagerApp()
    const boom = app.task('proj.boom', (m: string) => {
      throw new TypeError(m)
    })
    const r = await boom.delay('x')
    assert.equal(await r.state, 'FAILURE')
    await assert.rejects(r.get(), { name: 'TypeError', message: 'x' })
    app.conf.task_eager_propagates = true
    await assert.rejects(boom.delay('y'), { name: 'TypeError', message: 'y' })
  })

  it('a task that sends a task runs it here, as its child', async () => {
    const app = eagerApp()
    let child: TaskContext | undefined
    app.task('proj.child', () => {
      child = currentTask()
      return 'c'
    })
    const parent = app.task('proj.parent', async () => {
      const r = await app.sendTask('proj.child')
      return `p+${await r.get()}`
    })
    const r = await parent.apply([], {}, { id: 'p-1' })
    assert.equal(r.result, 'p+c')
    assert.equal(child?.parentId, 'p-1')
    assert.equal(child?.rootId, 'p-1')
  })

  it('a link gets the result and runs here', async () => {
    const app = eagerApp()
    const add = app.task('proj.add', (x: number, y: number) => x + y)
    const got: number[] = []
    const keep = app.task('proj.keep', (x: number) => got.push(x))
    await add.applyAsync([1, 2], {}, { link: keep.s() })
    assert.deepEqual(got, [3])
  })
})

describe('[eager] chains, groups and chords', () => {
  function canvasApp() {
    const app = eagerApp()
    const add = app.task('proj.add', (x: number, y: number) => x + y)
    const mul = app.task('proj.mul', (x: number, y: number) => x * y)
    const tsum = app.task('proj.tsum', (xs: number[]) => xs.reduce((a, b) => a + b, 0))
    const boom = app.task('proj.boom', () => {
      throw new TypeError('boom')
    })
    const ctx = app.task('proj.ctx', () => {
      const { id, group, parentId, rootId } = currentTask()
      return { id, group, parentId, rootId }
    })
    return { app, add, mul, tsum, boom, ctx }
  }

  it("a chain passes each result on; its result is the last step's, with parents", async () => {
    const { app, add, mul } = canvasApp()
    const r = await app.chain(add.s(1, 2), mul.s(10), add.s(4))
    assert.ok(r instanceof EagerResult)
    assert.equal(await r.get(), 34)
    assert.equal(await (r.parent as EagerResult).get(), 30)
    assert.equal(await ((r.parent as EagerResult).parent as EagerResult).get(), 3)
  })

  it("an immutable step ignores the result; the steps are each other's parent under one root", async () => {
    const { app, add, ctx } = canvasApp()
    const r = (await app.chain(add.s(1, 2), ctx.si())) as EagerResult
    const info = (await r.get()) as { parentId: string; rootId: string }
    assert.equal(info.parentId, (r.parent as EagerResult).id)
    assert.equal(info.rootId, (r.parent as EagerResult).id)
  })

  it("a failed step rejects the chain with its error, as Celery's eager chain raises; a failed last step is its result", async () => {
    const { app, add, boom } = canvasApp()
    await assert.rejects(app.chain(boom.s(), add.s(1)), { name: 'TypeError', message: 'boom' })
    const r = await app.chain(add.s(1, 1), boom.si())
    assert.ok(r instanceof EagerResult)
    assert.equal(r.status, 'FAILURE')
  })

  it('a group gives a GroupResult of EagerResults, in order, under one group id', async () => {
    const { app, add, ctx } = canvasApp()
    const g = await app.group(add.s(1, 1), add.s(2, 2), ctx.s())
    assert.ok(g instanceof GroupResult)
    assert.ok(g.results.every((r) => r instanceof EagerResult))
    const [two, four, info] = await g.get()
    assert.deepEqual([two, four], [2, 4])
    assert.equal((info as { group: string }).group, g.id)
    assert.equal(await g.ready(), true)
  })

  it("a failed member rejects the group's get(), or with propagate: false stands in its place", async () => {
    const { app, add, boom } = canvasApp()
    const g = await app.group(add.s(1, 1), boom.s())
    await assert.rejects(g.get(), { message: 'boom' })
    const values = await g.get({ propagate: false })
    assert.equal(values[0], 2)
    assert.ok(values[1] instanceof TypeError)
  })

  it('a chain ending in a group gives that GroupResult, each member with the previous result', async () => {
    const { app, add } = canvasApp()
    const group = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [add.s(10), add.s(20)] },
      options: {},
      subtask_type: 'group',
      immutable: false,
    }
    const r = await app.chain(add.s(1, 2), group as never)
    assert.ok(r instanceof GroupResult)
    assert.deepEqual(await r.get(), [13, 23])
  })

  it("a chord runs the body with the header's results", async () => {
    const { app, add, tsum } = canvasApp()
    const r = await app.chord([add.s(1, 1), add.s(2, 2)], tsum.s())
    assert.ok(r instanceof EagerResult)
    assert.equal(await r.get(), 6)
  })

  it('chords need no result backend when eager; a failed header task rejects', async () => {
    const { app, add, boom, tsum } = canvasApp()
    app.backend = async () => {
      throw new Error('no backend in an eager test')
    }
    assert.equal(await (await app.chord([add.s(1, 1)], tsum.s())).get(), 2)
    await assert.rejects(app.chord([add.s(1, 1), boom.s()], tsum.s()), { message: 'boom' })
  })

  it('map and starmap run here too', async () => {
    const { app, mul, tsum } = canvasApp()
    assert.deepEqual(
      await (
        await app.chain(
          mul.starmap([
            [1, 2],
            [3, 4],
          ]),
        )
      ).get(),
      [2, 12],
    )
    assert.deepEqual(await (await app.chain(tsum.map([[1, 2], [3]]))).get(), [3, 3])
  })

  it('an unknown task in a canvas fails with NotRegistered', async () => {
    const { app, add } = canvasApp()
    await assert.rejects(
      app.chain(add.s(1, 1), { task: 'proj.nope', args: [], kwargs: {}, options: {}, subtask_type: null, immutable: false }),
      { name: 'NotRegistered', message: 'proj.nope' },
    )
  })
})
