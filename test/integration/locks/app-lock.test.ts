// app.lock(name, { timeout, wait }, fn): user code outside a task under the
// same locks as tasks, on the Redis (db 9) and file:// stores.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createApp, LockedError, type App } from '../../../src/index.js'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../../helpers/brokers.js'

const redisSkip = await brokerSkipReason('redis')
const apps: App[] = []
after(async () => {
  for (const app of apps) await app.close()
})

for (const [kind, url, skip] of [
  ['redis', REDIS_URL.replace(/\/\d*$/, '/9'), redisSkip],
  ['file', `file://${mkdtempSync(join(tmpdir(), 'tsq-app-lock-'))}`, false],
] as const) {
  describe(`app.lock() on the ${kind} store`, { skip }, () => {
    const app = createApp({ name: 'locks-app', broker: url })
    apps.push(app)

    it('runs fn holding the lock, gives its result, frees the lock after', async () => {
      const name = uniqueName('locks-app')
      const seen: number[] = []
      const result = await app.lock(name, { timeout: 5 }, async (lease) => {
        seen.push(lease.token)
        assert.equal(lease.id, name)
        // Held: a second taker is refused with the lease left.
        await assert.rejects(
          app.lock(name, { timeout: 5 }, () => 'no'),
          (e: unknown) => e instanceof LockedError && e.remainingMs > 0,
        )
        return 'done'
      })
      assert.equal(result, 'done')
      // Free again, with a larger token.
      await app.lock(name, {}, (lease) => seen.push(lease.token))
      assert.ok(seen[1]! > seen[0]!)
    })

    it('frees the lock when fn throws, and passes the error on', async () => {
      const name = uniqueName('locks-app')
      await assert.rejects(
        app.lock(name, { timeout: 5 }, () => {
          throw new Error('migration failed')
        }),
        /migration failed/,
      )
      assert.equal(await app.lock(name, { timeout: 5 }, () => 'free'), 'free')
    })

    it('[wait] a second caller waits for the first to finish; runs never overlap', async () => {
      const name = uniqueName('locks-app')
      let inside = 0
      let most = 0
      const run = () =>
        app.lock(name, { timeout: 5, wait: 20 }, async () => {
          inside++
          most = Math.max(most, inside)
          await new Promise((r) => setTimeout(r, 150))
          inside--
        })
      await Promise.all([run(), run(), run()])
      assert.equal(most, 1)
    })

    it('keeps the lock past its lease while fn runs (renewal)', async () => {
      const name = uniqueName('locks-app')
      // Three leases long; the lease is wide enough for a loaded machine's event-loop stalls.
      await app.lock(name, { timeout: 1.5 }, async (lease) => {
        await new Promise((r) => setTimeout(r, 4500))
        assert.equal(lease.signal.aborted, false)
        await assert.rejects(
          app.lock(name, { timeout: 1.5 }, () => 'no'),
          LockedError,
        )
      })
    })
  })
}

describe('app.lock() bad input', () => {
  it('refuses an empty name and a timeout that is not above 0, with one clear message', async () => {
    const app = createApp({ name: 'locks-app', broker: `file://${mkdtempSync(join(tmpdir(), 'tsq-app-lock-'))}` })
    apps.push(app)
    await assert.rejects(
      app.lock('', {}, () => 1),
      /name must be a non-empty string/,
    )
    await assert.rejects(
      app.lock('x', { timeout: 0 }, () => 1),
      /timeout must be a number of seconds above 0/,
    )
  })
})
