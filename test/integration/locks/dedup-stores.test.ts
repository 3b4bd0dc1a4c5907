// The dedup store contract on Redis (Lua), RabbitMQ and file:// (one document
// under the lock store's mutex): concurrent simple-mode offers of one id give
// one standing task; a delayed task is replaced and its claim says by whom,
// the standing one once claimed is not replaced; extend gives the full ttl
// again; release frees only the standing task's id; list and remove.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { closeDedupStores, closeLockStores, openDedupStore, type DedupRequest, type DedupStore } from '../../../src/locks/index.js'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName } from '../../helpers/brokers.js'

const redisSkip = await brokerSkipReason('redis')
const amqpSkip = await brokerSkipReason('amqp')
after(async () => {
  await closeDedupStores()
  await closeLockStores()
})

const req = (key: string, taskId: string, over: Partial<DedupRequest> = {}): DedupRequest => ({
  key,
  taskId,
  mode: 'simple',
  ttlMs: null,
  extend: false,
  replace: false,
  etaMs: 0,
  ...over,
})

for (const [kind, url, skip] of [
  ['redis', REDIS_URL.replace(/\/\d*$/, '/9'), redisSkip],
  ['amqp', AMQP_URL, amqpSkip],
  ['file', `file://${mkdtempSync(join(tmpdir(), 'tsq-dedup-'))}`, false],
] as const) {
  describe(`${kind} dedup store`, { skip, timeout: 60_000 }, () => {
    const store = (): Promise<DedupStore> => openDedupStore({ brokerUrl: url })

    it('30 concurrent simple-mode offers of one id: one stands, the others name it; release by another task frees nothing', async () => {
      const s = await store()
      const key = uniqueName('t') + ':k'
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => s.offer(req(key, `task-${i}`))))
      const standing = answers.flatMap((a, i) => (a.stands ? [`task-${i}`] : []))
      assert.equal(standing.length, 1)
      for (const a of answers) if (!a.stands) assert.deepEqual(a, { stands: false, taskId: standing[0], leftMs: null })
      assert.equal(await s.release(key, 'someone-else'), false)
      const listed = (await s.list()).find((l) => l.key === key)
      assert.equal(listed?.taskId, standing[0])
      assert.equal(listed?.leftMs, null)
      assert.equal(await s.release(key, standing[0]!), true)
      assert.equal((await s.offer(req(key, 'next'))).stands, true)
      assert.equal(await s.remove(key), true)
      assert.equal(await s.remove(key), false)
    })

    it('replace: a delayed task is replaced, its claim is refused; the claimed one is no longer replaced', async () => {
      const s = await store()
      const key = uniqueName('t') + ':k'
      const now = Date.now()
      const d = (taskId: string, at: number) => req(key, taskId, { mode: 'debounce', ttlMs: 5000, replace: true, etaMs: at + 5000 })
      assert.deepEqual(await s.offer(d('a', now), now), { stands: true, replaced: null })
      assert.deepEqual(await s.offer(d('b', now + 10), now + 10), { stands: true, replaced: 'a' })
      assert.deepEqual(await s.claim(key, 'a', now + 20), { go: false, by: 'b' })
      assert.deepEqual(await s.claim(key, 'b', now + 30), { go: true })
      const refused = await s.offer(d('c', now + 40), now + 40)
      assert.equal(refused.stands, false)
      if (!refused.stands) {
        assert.equal(refused.taskId, 'b')
        assert.ok(refused.leftMs !== null && refused.leftMs > 3000 && refused.leftMs <= 5000, String(refused.leftMs))
      }
      assert.equal((await s.list()).find((l) => l.key === key)?.started, true)
      await s.remove(key)
    })

    it('throttle: the time left, extend starts it again, and it runs out', async () => {
      const s = await store()
      const key = uniqueName('t') + ':k'
      const t = (taskId: string, extend = false) => req(key, taskId, { mode: 'throttle', ttlMs: 600, extend })
      assert.equal((await s.offer(t('a'))).stands, true)
      await new Promise((r) => setTimeout(r, 300))
      const extended = await s.offer(t('b', true))
      assert.ok(!extended.stands && extended.leftMs !== null && extended.leftMs > 450, JSON.stringify(extended))
      await new Promise((r) => setTimeout(r, 700))
      assert.equal((await s.offer(t('c'))).stands, true)
      await s.remove(key)
    })
  })
}
