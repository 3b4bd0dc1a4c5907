// createApp({ defaultQueue }) is Celery's task_default_queue: the client's
// sends, beat's entries and (tested in interop) a worker's follow-ups go there
// when nothing names a queue.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createApp, signature } from '../../../src/app/index.js'
import { definitionFromConfig } from '../../../src/beat/entry.js'
import { taskOptionsOf } from '../../../src/beat/scheduler.js'

describe("[default queue] Celery's task_default_queue", () => {
  it('is celery unless the app names one', () => {
    assert.equal(createApp({ name: 'proj' }).defaultQueue, 'celery')
    assert.equal(createApp({ name: 'proj', defaultQueue: 'jobs' }).defaultQueue, 'jobs')
  })

  it('sendTask, delay and chain send there unless a queue is named (file broker)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsq-defq-'))
    const app = createApp({ name: 'proj', defaultQueue: 'jobs', broker: `file://${dir}`, resultBackend: 'disabled://' })
    try {
      const add = app.task('proj.add', (x: number, y: number) => x + y)
      await app.sendTask('proj.add', [1, 2])
      await add.delay(3, 4)
      await app.chain(signature('proj.add', [1, 1]), signature('proj.add', [2]))
      await app.sendTask('proj.add', [5, 6], {}, { queue: 'other' })
      await app.chain(signature('proj.add', [1, 1], {}, { queue: 'other' }))
      const transport = await app.transport()
      assert.equal((await transport.declareQueue({ name: 'jobs', durable: true, exclusive: false, autoDelete: false })).messageCount, 3)
      assert.equal((await transport.declareQueue({ name: 'other', durable: true, exclusive: false, autoDelete: false })).messageCount, 2)
      assert.equal((await transport.declareQueue({ name: 'celery', durable: true, exclusive: false, autoDelete: false })).messageCount, 0)
    } finally {
      await app.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('beat sends an entry that names no queue there, and one that names a queue to it', () => {
    const plain = { definition: definitionFromConfig('e', { task: 'proj.add', schedule: 30 }), meta: { lastRunAt: null, totalRunCount: 0 } }
    const named = {
      definition: definitionFromConfig('n', { task: 'proj.add', schedule: 30, options: { queue: 'other' } }),
      meta: { lastRunAt: null, totalRunCount: 0 },
    }
    const jobs = () => ({ queue: 'jobs' })
    assert.equal(taskOptionsOf(plain, jobs).queue, 'jobs')
    assert.equal(taskOptionsOf(named, jobs).queue, 'other')
    assert.equal(taskOptionsOf(plain).queue, undefined, 'no app: send-task falls back to celery')
  })
})
