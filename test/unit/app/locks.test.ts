// The task locks as the app uses them, with nothing but the app imported (no
// package entry, no hook to fill): app.lock() takes a lock, a task with the
// option `lock` runs eagerly under it and is skipped while another holds it,
// and a task with the option `once` marks before it sends, unmarks a send that
// failed, and refuses (or with `graceful`, answers) while a mark is there.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createApp } from '../../../src/app/index.js'

const app = createApp({ name: 'proj', broker: `file://${mkdtempSync(join(tmpdir(), 'tsq-app-locks-'))}` })
app.transport = async () => {
  throw new Error('no broker in this test')
}
after(() => app.close())

describe('[app locks] the app alone takes its locks', () => {
  it('app.lock() runs its function under the lock', async () => {
    assert.equal(await app.lock('job', {}, (lease) => `ran under ${lease.id}`), 'ran under job')
  })

  it('a locked task runs under its lock, and is skipped while another holds it', async () => {
    const locked = app.task('proj.locked', () => 'ran', { lock: {} })
    const first = await locked.apply()
    assert.equal(first.status, 'SUCCESS')
    assert.equal(first.result, 'ran')
    // Without a key, the task's lock id is `<name>-lock`: held here, the run finds it taken.
    const skipped = await app.lock('proj.locked-lock', {}, () => locked.apply())
    assert.equal(skipped.status, 'IGNORED')
    assert.equal((await locked.apply()).result, 'ran')
  })

  it('a once send that fails leaves no mark behind: the next send is tried, not refused', async () => {
    const once = app.task('proj.once', () => 'ran', { once: {} })
    await assert.rejects(once.delay(), /no broker in this test/)
    await assert.rejects(once.delay(), /no broker in this test/)
  })

  it('a once send finding the mark is refused with AlreadyQueued, or with graceful gives the queued task', async () => {
    const { lockSettings } = await import('../../../src/app/index.js')
    const { openLockStore, onceIdFor, AlreadyQueued } = await import('../../../src/locks/index.js')
    const once = app.task('proj.once2', () => 'ran', { once: {} })
    const store = await openLockStore(lockSettings(app))
    const markId = onceIdFor('proj.once2', {}, [], {})
    assert.equal((await store.mark(markId, 'queued-id', 60_000)).set, true)
    await assert.rejects(once.delay(), (e: Error) => e instanceof AlreadyQueued && e.message.includes('queued-id'))
    const queued = await once.applyAsync([], {}, { once: { graceful: true } })
    assert.equal(queued.id, 'queued-id')
    await store.unmark(markId, 'queued-id')
  })
})
