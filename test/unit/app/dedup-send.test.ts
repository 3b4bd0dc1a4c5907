// The send option `dedup` as the app uses it, with no broker (its sends fail):
// a send whose id stands answers with the standing task's AsyncResult and
// sends nothing; the task option is every send's default, and `dedup: null`
// on one send turns it off; a send that fails frees the id it took; bad
// options are refused before anything is asked.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createApp } from '../../../src/app/index.js'
import { openDedupStore } from '../../../src/locks/index.js'

const broker = `file://${mkdtempSync(join(tmpdir(), 'tsq-app-dedup-'))}`
const app = createApp({ name: 'proj', broker })
app.transport = async () => {
  throw new Error('no broker in this test')
}
after(() => app.close())

const stand = async (key: string, taskId: string) =>
  (await openDedupStore({ brokerUrl: broker })).offer({
    key,
    taskId,
    mode: 'simple',
    ttlMs: null,
    extend: false,
    replace: false,
    etaMs: 0,
  })

describe('[app dedup] the send option', () => {
  it('a send whose id stands answers with the standing task, sending nothing', async () => {
    await stand('proj.refresh:u1', 'standing-id')
    const refresh = app.task('proj.refresh', () => 'ran')
    const result = await refresh.applyAsync([], {}, { dedup: { id: 'u1' } })
    assert.equal(result.id, 'standing-id')
  })

  it("the task option is each send's default (a function id gets the arguments); dedup: null turns it off", async () => {
    await stand('proj.sync:user-7', 'standing-sync')
    const sync = app.task('proj.sync', (user: number) => user, { dedup: { id: (user: number) => `user-${user}` } })
    assert.equal((await sync.delay(7)).id, 'standing-sync')
    await assert.rejects(sync.applyAsync([7], {}, { dedup: null }), /no broker in this test/)
  })

  it('a send that fails frees the id it took: the next one is tried, not deduplicated', async () => {
    const once = app.task('proj.once', () => 'ran', { dedup: { id: 'x', mode: 'throttle', ttl: 60 } })
    await assert.rejects(once.delay(), /no broker in this test/)
    await assert.rejects(once.delay(), /no broker in this test/)
    const listed = (await (await openDedupStore({ brokerUrl: broker })).list()).filter((l) => l.key === 'proj.once:x')
    assert.deepEqual(listed, [])
  })

  it('refuses a mode without its ttl', async () => {
    const bad = app.task('proj.bad', () => 'ran')
    await assert.rejects(bad.applyAsync([], {}, { dedup: { id: 'x', mode: 'debounce' } }), /needs a ttl/)
  })
})
