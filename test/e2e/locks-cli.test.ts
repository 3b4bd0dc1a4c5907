// `tsq locks ls/show/rm`: a table or one JSON document, one-line errors with
// Celery's exit codes, no prompt when stdin is not a terminal; on Redis (db 9)
// and the file:// store.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { LockRecord, LockStore } from '../../src/locks/index.js'
import { FileLockStore } from '../../src/locks/file-store.js'
import { RedisLockStore } from '../../src/locks/redis-store.js'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { runTsq } from '../helpers/cli.js'

const redisSkip = await brokerSkipReason('redis')
const stores: LockStore[] = []
after(async () => {
  for (const s of stores) await s.close()
})

for (const [kind, url, skip] of [
  ['redis', REDIS_URL.replace(/\/\d*$/, '/9'), redisSkip],
  ['file', `file://${mkdtempSync(join(tmpdir(), 'tsq-locks-cli-'))}`, false],
] as const) {
  describe(`tsq locks on the ${kind} store`, { skip, timeout: 120_000 }, () => {
    const store = skip ? (undefined as unknown as LockStore) : kind === 'redis' ? new RedisLockStore(url) : new FileLockStore(url)
    if (!skip) stores.push(store)

    it('ls --json, show, rm (refused without -f off a terminal, then -f), and a lock that is gone', async () => {
      const id = uniqueName('locks-cli')
      const got = await store.acquire(id, 60_000, { node: 'w1@h', pid: 4242, task: 'feeds.import', taskId: 'tid-1' })
      assert.ok(got.acquired)
      const record: LockRecord = got.record

      const ls = await runTsq(['locks', 'ls', '-b', url, '--json'])
      assert.equal(ls.code, 0, ls.stderr)
      const rows = JSON.parse(ls.stdout) as Array<Record<string, unknown>>
      const row = rows.find((r) => r.id === id)
      assert.ok(row, ls.stdout)
      assert.deepEqual(
        [row.task, row.taskId, row.node, row.pid, row.token, row.leaseS],
        ['feeds.import', 'tid-1', 'w1@h', 4242, record.token, 60],
      )
      assert.ok((row.leftS as number) > 0 && (row.leftS as number) <= 60)

      const table = await runTsq(['locks', 'ls', '-b', url], { env: { NO_COLOR: '1' } })
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, new RegExp(`${id} .*feeds\\.import .*w1@h \\(pid 4242\\) .*tid-1`))

      const show = await runTsq(['locks', 'show', id, '-b', url, '-j'])
      assert.equal(show.code, 0, show.stderr)
      assert.equal((JSON.parse(show.stdout) as { token: number }).token, record.token)

      const refused = await runTsq(['locks', 'rm', id, '-b', url], { input: '' })
      assert.equal(refused.code, 64)
      assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr)
      assert.match(refused.stderr, /stdin is not a terminal, pass -f\/--force/)
      assert.ok(await store.get(id), 'still held after the refusal')

      const rm = await runTsq(['locks', 'rm', id, '-b', url, '-f'])
      assert.equal(rm.code, 0, rm.stderr)
      assert.equal(await store.get(id), null)
      // The deposed holder's renewal fails, which is how its task hears of it.
      assert.equal(await store.renew(record), false)

      const gone = await runTsq(['locks', 'show', id, '-b', url])
      assert.equal(gone.code, 64)
      assert.match(gone.stderr, /no lock ".*" is held/)
    })
  })
}

describe('tsq locks: stores it cannot use', { timeout: 60_000 }, () => {
  it('an unreachable Redis exits 69 with one line; an unreachable RabbitMQ (its amqp:// store) too, without the password', async () => {
    const down = await runTsq(['locks', 'ls', '-b', 'redis://127.0.0.1:1/0'])
    assert.equal(down.code, 69)
    assert.equal(down.stderr.trim().split('\n').length, 1, down.stderr)
    assert.match(down.stderr, /lock store redis:\/\/127\.0\.0\.1:1\/0 unreachable/)
    const amqp = await runTsq(['locks', 'ls', '-b', 'amqp://guest:guest@127.0.0.1:1//'])
    assert.equal(amqp.code, 69, amqp.stderr)
    assert.match(amqp.stderr, /lock store amqp:\/\/\*\*\*@127\.0\.0\.1:1\/\/ unreachable/)
    assert.doesNotMatch(amqp.stderr, /guest:guest/)
  })
})
