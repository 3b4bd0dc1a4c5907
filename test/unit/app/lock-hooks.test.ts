// tsq-test: own-process (it checks the app before and after locks/ fills its hooks: another file loading locks/ first would change what it sees)
// The app reaches the task locks (locks/, a layer above it) through hooks that
// locks/index.ts fills as it loads. This file imports the app alone, as a
// script that skipped the package entry would: a lock, a once or app.lock()
// must then fail, saying why, rather than run unlocked or send unmarked. Once
// locks/ is loaded, the same app works.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createApp } from '../../../src/app/app.js'

const app = createApp({ name: 'proj', broker: `file://${mkdtempSync(join(tmpdir(), 'tsq-lock-hooks-'))}` })
app.transport = async () => {
  throw new Error('no broker in this test')
}
after(() => app.close())

const NOT_LOADED = /needs tsq's locks, which this process has not loaded: import the package entry \('tsq'\)/

describe('[lock hooks] without locks/ loaded', () => {
  it('refuses a locked task, a once send and app.lock(), with one message', async () => {
    const locked = app.task('proj.locked', () => 'ran', { lock: {} })
    const once = app.task('proj.once', () => 'ran', { once: {} })
    await assert.rejects(async () => locked.apply(), (e: Error) => NOT_LOADED.test(e.message) && e.message.startsWith('task proj.locked: the option lock'))
    await assert.rejects(once.delay(), (e: Error) => NOT_LOADED.test(e.message) && e.message.startsWith('task proj.once: the option once'))
    await assert.rejects(app.lock('job', {}, () => 'ran'), (e: Error) => NOT_LOADED.test(e.message) && e.message.startsWith('app.lock(job)'))
  })

  it('leaves a task without those options alone', async () => {
    const plain = app.task('proj.plain', () => 'ran')
    assert.equal((await plain.apply()).result, 'ran')
  })
})

describe('[lock hooks] once locks/ is loaded', () => {
  it('takes the lock', async () => {
    await import('../../../src/locks/index.js')
    assert.equal(await app.lock('job', {}, (lease) => `ran under ${lease.id}`), 'ran under job')
    const locked = app.task('proj.locked2', () => 'ran', { lock: {} })
    assert.equal((await locked.apply()).result, 'ran')
  })
})
