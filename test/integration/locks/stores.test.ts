// The Lock contract against each store: exclusion, tokens, compare-and-set
// renewal and release, a dead holder's locks freed, expiry.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { LockStore } from '../../../src/locks/index.js'
import { FileLockStore } from '../../../src/locks/file-store.js'
import { RedisLockStore } from '../../../src/locks/redis-store.js'
import { brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../../helpers/brokers.js'
import { tryHold } from '../../../src/locks/hold.js'

const redisSkip = await brokerSkipReason('redis')
const stores: LockStore[] = []
after(async () => {
  for (const s of stores) await s.close()
})

const who = (pid: number, taskId = 't1') => ({ node: 'n1', pid, task: 'x.y', taskId })

for (const [kind, make, skip] of [
  ['redis', () => new RedisLockStore(REDIS_URL.replace(/\/\d*$/, '/9')), redisSkip],
  ['file', () => new FileLockStore(`file://${mkdtempSync(join(tmpdir(), 'tsq-locks-'))}`), false],
] as const) {
  describe(`${kind} lock store`, { skip }, () => {
    const store = skip ? (undefined as unknown as LockStore) : make()
    if (!skip) stores.push(store)

    it('excludes a second holder and grows the token', async () => {
      const id = uniqueName('lock')
      const a = await store.acquire(id, 5000, who(1))
      assert.ok(a.acquired)
      const b = await store.acquire(id, 5000, who(2))
      assert.equal(b.acquired, false)
      if (!b.acquired) assert.ok(b.remainingMs > 0 && b.remainingMs <= 5000)
      assert.equal(await store.release(a.record), true)
      const c = await store.acquire(id, 5000, who(2))
      assert.ok(c.acquired && c.record.token === a.record.token + 1)
      const listed = await store.get(id)
      assert.equal(listed?.holder, 'n1:2')
      assert.equal(listed?.taskId, 't1')
      if (c.acquired) await store.release(c.record)
    })

    it('refuses a deposed holder: its renewal and release fail once another took the lock', async () => {
      const id = uniqueName('lock')
      const a = await store.acquire(id, 150, who(1))
      assert.ok(a.acquired)
      await new Promise((r) => setTimeout(r, 250))
      const b = await store.acquire(id, 5000, who(2))
      assert.ok(b.acquired)
      assert.equal(await store.renew(a.record), false)
      assert.equal(await store.release(a.record), false)
      assert.equal((await store.get(id))?.token, b.record.token)
      assert.equal(await store.renew(b.record), true)
      await store.release(b.record)
    })

    it('frees every lock of a dead holder, and only those', async () => {
      const ids = [uniqueName('lock'), uniqueName('lock')]
      const other = uniqueName('lock')
      for (const id of ids) assert.ok((await store.acquire(id, 60_000, who(4242))).acquired)
      const keep = await store.acquire(other, 60_000, who(4343))
      const freed = await store.releaseHolder('n1:4242')
      assert.deepEqual(freed.sort(), ids.sort())
      for (const id of ids) assert.equal(await store.get(id), null)
      assert.ok(await store.get(other))
      if (keep.acquired) await store.release(keep.record)
    })

    it('keeps a lock held past its lease by renewing every third of it', async () => {
      const id = uniqueName('lock')
      // Three leases long; the lease is wide enough for a loaded machine's event-loop stalls.
      const got = await tryHold(store, id, 1500, who(5))
      assert.ok(got.held)
      await new Promise((r) => setTimeout(r, 4500))
      assert.equal((await store.acquire(id, 1500, who(6))).acquired, false)
      assert.equal(got.held.lost.aborted, false)
      await got.held.release()
      assert.equal(await store.get(id), null)
    })

    it('tells the holder through its signal when an operator removes the lock', async () => {
      const id = uniqueName('lock')
      const got = await tryHold(store, id, 300, who(7))
      assert.ok(got.held)
      assert.equal(await store.remove(id), true)
      // Told at its next renewal (every 100 ms here); bounded, not timed.
      await waitFor(() => got.held!.lost.aborted || null, { timeoutMs: 10_000, what: 'the lost signal' })
      assert.equal((got.held.lost.reason as Error).name, 'LockLostError')
      await got.held.release()
    })

    it('lists locks with their lease left', async () => {
      const id = uniqueName('lock')
      const a = await store.acquire(id, 10_000, who(8))
      const all = await store.list()
      const mine = all.find((l) => l.id === id)
      assert.ok(mine && mine.leftMs > 0 && mine.leftMs <= 10_000)
      if (a.acquired) await store.release(a.record)
    })
  })
}

describe('a lock store that is down', () => {
  it('fails acquisition with a clear error instead of granting the lock', async () => {
    const store = new RedisLockStore('redis://127.0.0.1:1/0')
    stores.push(store)
    await assert.rejects(store.acquire('x', 1000, who(1)))
  })
})

describe('a Python holder with redis-py (the recipe in docs/locks.md)', { skip: redisSkip }, () => {
  it('excludes tsq while it holds the lock, is listed by tsq, and tsq takes it after with a larger token', async () => {
    const { execFileSync, spawnSync } = await import('node:child_process')
    if (spawnSync('/usr/bin/python3', ['-c', 'import redis'], { stdio: 'ignore' }).status !== 0) {
      if (process.env.CI) throw new Error('CI requires redis-py for /usr/bin/python3')
      return
    }
    const url = REDIS_URL.replace(/\/\d*$/, '/9')
    const store = new RedisLockStore(url)
    stores.push(store)
    const py = (step: string) =>
      execFileSync(
        '/usr/bin/python3',
        [
          '-c',
          `
import hashlib, json, os, socket, sys, time, redis
r = redis.Redis.from_url('${url}')
lock_id = 'locks.py-lock-' + hashlib.md5(b'${process.pid}').hexdigest()
key = 'tsq:lock:' + lock_id
if '${step}' == 'take':
    token = r.incr('tsq:lock-token:' + lock_id)
    node, pid = socket.gethostname(), os.getpid()
    value = '{"token":%d,' % token + json.dumps({'id': lock_id, 'holder': f'{node}:{pid}', 'node': node, 'pid': pid,
        'task': None, 'taskId': None, 'acquiredAt': int(time.time() * 1000), 'leaseMs': 60000}, separators=(',', ':'))[1:]
    assert r.set(key, value, nx=True, px=60000)
    r.set(key + ':py-value', value, px=60000)
    print(lock_id)
else:
    value = r.get(key + ':py-value')
    print(r.eval("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0", 1, key, value))
    r.delete(key + ':py-value')
`,
        ],
        { encoding: 'utf8' },
      ).trim()
    const id = py('take')
    const refused = await store.acquire(id, 5000, who(1))
    assert.equal(refused.acquired, false)
    const listed = await store.get(id)
    assert.ok(listed && listed.task === null && listed.leaseMs === 60_000)
    assert.equal(py('release'), '1')
    const got = await store.acquire(id, 5000, who(1))
    assert.ok(got.acquired && got.record.token === listed.token + 1)
    await store.release(got.record)
  })
})
