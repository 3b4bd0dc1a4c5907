// The example tasks, tested as Celery users test theirs: in this process, no
// broker, no worker. `node --test examples/` runs it (after `npm run build`,
// as `import ... from 'tsq'` loads the built package); `npm test` does too.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { app, add, mul, fail, sleep } from './tasks.js'

describe('examples/tasks.js, run eagerly', () => {
  before(() => {
    // Celery's task_always_eager: delay(), applyAsync(), chains and groups run here.
    app.conf.task_always_eager = true
  })
  after(() => {
    app.conf.task_always_eager = false
  })

  it('apply() runs a task here and gives its EagerResult', async () => {
    const r = await add.apply([2, 3])
    assert.equal(r.status, 'SUCCESS')
    assert.equal(r.result, 5)
    assert.equal(await r.get(), 5)
  })

  it('delay() gives the result at once', async () => {
    const r = await mul.delay(6, 7)
    assert.equal(await r.state, 'SUCCESS')
    assert.equal(await r.get(), 42)
  })

  it('a task that throws: FAILURE, and get() rejects with its error', async () => {
    const r = await fail.delay('boom')
    assert.equal(r.status, 'FAILURE')
    assert.ok(r.result instanceof TypeError)
    await assert.rejects(r.get(), { name: 'TypeError', message: 'boom' })
    assert.ok((await r.get({ propagate: false })) instanceof TypeError)
  })

  it('with task_eager_propagates, delay() itself rejects', async () => {
    app.conf.task_eager_propagates = true
    try {
      await assert.rejects(fail.delay('loud'), { name: 'TypeError', message: 'loud' })
    } finally {
      app.conf.task_eager_propagates = false
    }
  })

  it('currentTask() works inside: proj.sleep reads its AbortSignal', async () => {
    assert.equal(await (await sleep.delay(0.01)).get(), 0.01)
  })

  it('a chain passes each result on; a group gives every result in order', async () => {
    assert.equal(await (await app.chain(add.s(1, 2), mul.s(10))).get(), 30)
    assert.deepEqual(await (await app.group(add.s(1, 1), mul.s(2, 3))).get(), [2, 6])
  })

  it('signals go out as in a worker', async () => {
    const seen = []
    const off = app.on('task_postrun', ({ sender, state }) => seen.push(`${sender} ${state}`))
    try {
      await add.delay(1, 1)
      await fail.delay('x')
    } finally {
      off()
    }
    assert.deepEqual(seen, ['proj.add SUCCESS', 'proj.fail FAILURE'])
  })
})
