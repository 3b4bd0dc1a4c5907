// Celery's built-in map/starmap/accumulate tasks, as a Python client's
// `add.map(xs)`, `add.starmap(pairs)` and `add.chunks(pairs, n)` send them:
// the canvas arrives as kwargs {task, it} and the worker calls the named task
// in-process, once per item, in order.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createApp } from '../../../src/app/app.js'
import { executeJob } from '../../../src/app/execution/executor.js'
import type { Job, Outcome } from '../../../src/app/execution/jobs.js'

function appWithTasks() {
  const app = createApp({ name: 'proj' })
  app.task('proj.add', (x: number, y: number) => x + y)
  app.task('proj.double', (x: number) => x * 2)
  app.task('proj.slow_double', async (x: number) => {
    await new Promise((resolve) => setTimeout(resolve, 5 - x))
    return x * 2
  })
  return app
}

function run(app: ReturnType<typeof createApp>, task: string, args: unknown[], kwargs: Record<string, unknown>): Promise<Outcome> {
  const job: Job = {
    id: 'id-1',
    task,
    args,
    kwargs,
    retries: 0,
    rootId: null,
    parentId: null,
    group: null,
    hostname: 'w@h',
    softTimeLimit: null,
  }
  return executeJob(app, job).outcome
}

const sig = (task: string) => ({ task, args: [], kwargs: {}, options: {}, subtask_type: null, immutable: false })

describe('[builtins] celery.map, celery.starmap, celery.accumulate', () => {
  it("celery.map calls the task with each item; the signature's own args are not used, as in Celery", async () => {
    const app = appWithTasks()
    const out = await run(app, 'celery.map', [], { task: { ...sig('proj.double'), args: [100] }, it: [1, 2, 3] })
    assert.deepEqual(out, { status: 'success', value: [2, 4, 6], runtime: (out as { runtime: number }).runtime })
  })

  it('celery.starmap spreads each item as the args', async () => {
    const out = await run(appWithTasks(), 'celery.starmap', [], {
      task: sig('proj.add'),
      it: [
        [1, 1],
        [2, 3],
        [10, 20],
      ],
    })
    assert.equal(out.status, 'success')
    assert.deepEqual(out.status === 'success' && out.value, [2, 5, 30])
  })

  it("an async task is awaited item by item, so the results keep the items' order", async () => {
    const out = await run(appWithTasks(), 'celery.map', [], { task: sig('proj.slow_double'), it: [1, 2, 3, 4] })
    assert.deepEqual(out.status === 'success' && out.value, [2, 4, 6, 8])
  })

  it("an unknown task fails the map with NotRegistered, as Celery's signature(...).type raises it", async () => {
    const out = await run(appWithTasks(), 'celery.starmap', [], { task: sig('proj.nope'), it: [[1, 2]] })
    assert.equal(out.status, 'failure')
    assert.deepEqual(out.status === 'failure' && { type: out.exc.type, args: out.exc.args, module: out.exc.module }, {
      type: 'NotRegistered',
      args: ['proj.nope'],
      module: 'celery.exceptions',
    })
  })

  it('celery.accumulate returns its args, or the one at kwargs.index', async () => {
    const app = appWithTasks()
    assert.deepEqual(await run(app, 'celery.accumulate', [1, 2, 3], {}).then((o) => o.status === 'success' && o.value), [1, 2, 3])
    assert.deepEqual(await run(app, 'celery.accumulate', [1, 2, 3], { index: 1 }).then((o) => o.status === 'success' && o.value), 2)
  })
})
