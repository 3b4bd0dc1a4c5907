// tsq-test: slow (sends through the embedded file broker)
// An app keeps what its sends derive from its options and conf (the
// resolved config, task_queues, routes, the encoder) and builds it again after
// any write to them (src/app/conf-watch.ts). A setting changed after sends
// have been made is what the next send uses. On the embedded file broker, so
// the queue a message went to can be counted.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createApp, signature, type App } from '../../../src/app/index.js'

const dirs: string[] = []
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

function fileApp(options: Parameters<typeof createApp>[0] = {}): App {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-sendplan-'))
  dirs.push(dir)
  return createApp({ name: 'proj', broker: `file://${dir}`, resultBackend: 'disabled://', ...options })
}

async function depth(app: App, queue: string): Promise<number> {
  const transport = await app.transport()
  return (await transport.declareQueue({ name: queue, durable: true, exclusive: false, autoDelete: false })).messageCount
}

describe('[send plan] a conf change after sends takes effect at the next send', () => {
  it('task_routes assigned, changed and deleted after sends', async () => {
    const app = fileApp({ defaultQueue: 'jobs' })
    try {
      const add = app.task('proj.add', (x: number, y: number) => x + y)
      await add.delay(1, 1)
      app.conf.task_routes = { 'proj.add': 'math' }
      await add.delay(2, 2)
      await app.sendTask('proj.add', [3, 3])
      app.conf.task_routes = { 'proj.*': { queue: 'glob' } }
      await add.delay(4, 4)
      delete app.conf.task_routes
      await add.delay(5, 5)
      assert.deepEqual([await depth(app, 'jobs'), await depth(app, 'math'), await depth(app, 'glob')], [2, 2, 1])
    } finally {
      await app.close()
    }
  })

  it('task_default_queue set in conf after sends, for sends, groups and sendMany', async () => {
    const app = fileApp()
    try {
      const add = app.task('proj.add', (x: number, y: number) => x + y)
      await add.delay(1, 1)
      app.conf.task_default_queue = 'later'
      assert.equal(app.defaultQueue, 'later')
      await add.delay(2, 2)
      await app.sendMany([signature('proj.add', [1, 2]), signature('proj.add', [3, 4])])
      await app.group(signature('proj.add', [5, 6]))
      assert.deepEqual([await depth(app, 'celery'), await depth(app, 'later')], [1, 4])
    } finally {
      await app.close()
    }
  })

  it('a conf object put in place of the old one (as a config module does) is read, and watched in turn', async () => {
    const app = fileApp({ conf: { task_routes: { 'proj.add': 'first' } } })
    try {
      const add = app.task('proj.add', (x: number, y: number) => x + y)
      await add.delay(1, 1)
      app.options.conf = { task_routes: { 'proj.add': 'second' } }
      await add.delay(2, 2)
      app.conf.task_routes = { 'proj.add': 'third' }
      await add.delay(3, 3)
      app.options.defaultQueue = 'fourth'
      delete app.conf.task_routes
      await add.delay(4, 4)
      assert.deepEqual(
        [await depth(app, 'first'), await depth(app, 'second'), await depth(app, 'third'), await depth(app, 'fourth')],
        [1, 1, 1, 1],
      )
    } finally {
      await app.close()
    }
  })

  it('task_queues and task_create_missing_queues changed after sends: the next send is refused as Celery refuses it', async () => {
    const app = fileApp()
    try {
      const add = app.task('proj.add', (x: number, y: number) => x + y)
      await add.applyAsync([1, 1], {}, { queue: 'extra' })
      app.conf.task_queues = [{ name: 'celery' }]
      app.conf.task_create_missing_queues = false
      await assert.rejects(add.applyAsync([2, 2], {}, { queue: 'elsewhere' }), /not in task_queues and task_create_missing_queues is False/)
      await add.delay(3, 3)
      app.conf.task_create_missing_queues = true
      await add.applyAsync([4, 4], {}, { queue: 'elsewhere' })
      assert.deepEqual([await depth(app, 'extra'), await depth(app, 'celery'), await depth(app, 'elsewhere')], [1, 1, 1])
    } finally {
      await app.close()
    }
  })

  it('task_serializer changed after sends: the next body is written by the new serializer', async () => {
    const app = fileApp({ defaultQueue: 'ser' })
    try {
      const add = app.task('proj.add', (x: number, y: number) => x + y)
      await add.delay(1, 1)
      app.conf.task_serializer = 'yaml'
      await add.delay(2, 2)
      const transport = await app.transport()
      const types: string[] = []
      let both!: () => void
      const received = new Promise<void>((resolve) => (both = resolve))
      const consumer = await transport.consume('ser', async (delivery) => {
        types.push(delivery.properties.contentType)
        await delivery.ack()
        if (types.length === 2) both()
      })
      // Bounded: a message that never comes fails the assertion below, not the run.
      const bound = new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref())
      await Promise.race([received, bound])
      await consumer.cancel()
      assert.deepEqual(types.sort(), ['application/json', 'application/x-yaml'])
    } finally {
      await app.close()
    }
  })
})
