// app.remote(): a handle on a task defined elsewhere sends by name as
// app.sendTask does (task_routes, the default queue), with its options as each
// send's defaults and a send's own options over them; its signatures carry
// its queue; under task_always_eager a name the app has runs here, one it
// lacks is sent; sendTask<R>() sends what sendTask() does.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp, EagerResult, type App } from '../../../src/app/index.js'

interface Published {
  sender: string
  routingKey: string
  args: unknown
  kwargs: unknown
  headers: Record<string, unknown>
}

async function withApp(conf: Record<string, unknown>, run: (app: App, published: Published[]) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-remote-'))
  const app = createApp({ name: 'client', defaultQueue: 'jobs', broker: `file://${dir}`, resultBackend: 'disabled://', conf })
  const published: Published[] = []
  app.on('before_task_publish', ({ sender, routingKey, body, headers }) =>
    published.push({ sender, routingKey, args: body[0], kwargs: body[1], headers: { ...headers } }),
  )
  try {
    await run(app, published)
  } finally {
    await app.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

it('[remote] delay() and applyAsync() send by name, routed by task_routes, the handle options under the send options', async () => {
  await withApp({ task_routes: { 'proj.mul': 'math' } }, async (app, published) => {
    const add = app.remote<[x: number, y: number], number>('proj.add')
    const mul = app.remote<[x: number, y: number], number>('proj.mul')
    const slow = app.remote<[x: number], number>('proj.slow', { queue: 'slow', priority: 3 })
    const r1 = await add.delay(1, 2)
    await mul.delay(3, 4)
    await slow.applyAsync([5], { verbose: true })
    await slow.applyAsync([6], {}, { queue: 'fast', countdown: 60 })
    assert.deepEqual(
      published.map((p) => [p.sender, p.routingKey, p.args, p.kwargs]),
      [
        ['proj.add', 'jobs', [1, 2], {}],
        ['proj.mul', 'math', [3, 4], {}],
        ['proj.slow', 'slow', [5], { verbose: true }],
        ['proj.slow', 'fast', [6], {}],
      ],
    )
    assert.equal(published[0]!.headers.id, r1.id)
    assert.equal(typeof published[3]!.headers.eta, 'string', 'the countdown became an eta')
    assert.equal(published[2]!.headers.eta, null)
    assert.deepEqual(slow.options, { queue: 'slow', priority: 3 }, "a send's options do not change the handle's")
  })
})

it("[remote] s() and si() carry the handle's queue; a chain of them is sent as any chain", async () => {
  await withApp({}, async (app, published) => {
    const add = app.remote<[x: number, y: number], number>('proj.add', { queue: 'math' })
    assert.deepEqual(add.s(1), {
      task: 'proj.add',
      args: [1],
      kwargs: {},
      options: { queue: 'math' },
      subtask_type: null,
      immutable: false,
    })
    assert.deepEqual(add.si(1, 2), {
      task: 'proj.add',
      args: [1, 2],
      kwargs: {},
      options: { queue: 'math' },
      subtask_type: null,
      immutable: true,
    })
    assert.deepEqual(app.remote('proj.plain').s(), {
      task: 'proj.plain',
      args: [],
      kwargs: {},
      options: {},
      subtask_type: null,
      immutable: false,
    })
    await app.chain(add.s(1, 2), add.s(10))
    assert.deepEqual(
      published.map((p) => [p.sender, p.routingKey, p.args]),
      [['proj.add', 'math', [1, 2]]],
    )
  })
})

it('[remote] under task_always_eager a name the app has runs here; one it lacks is sent', async () => {
  await withApp({ task_always_eager: true }, async (app, published) => {
    app.task('proj.add', (x: number, y: number) => x + y)
    const add = app.remote<[x: number, y: number], number>('proj.add')
    const r = await add.delay(2, 3)
    assert.ok(r instanceof EagerResult)
    assert.equal(await r.get(), 5)
    await app.remote<[], null>('proj.elsewhere').delay()
    assert.deepEqual(
      published.map((p) => p.sender),
      ['proj.elsewhere'],
    )
  })
})

it('[remote] sendTask<R>() sends the message it always did: the type parameter is types only', async () => {
  await withApp({}, async (app, published) => {
    const r = await app.sendTask<number>('proj.add', [1, 2], { z: 3 }, { queue: 'math' })
    assert.deepEqual(
      published.map((p) => [p.sender, p.routingKey, p.args, p.kwargs]),
      [['proj.add', 'math', [1, 2], { z: 3 }]],
    )
    assert.equal(published[0]!.headers.id, r.id)
  })
})
