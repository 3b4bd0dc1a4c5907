// While two beats run (--ha lease, Redis store),
// `tsq schedule add|set|disable|enable|rm` change one entry, and the sends
// follow each change within a loop interval; the other entry is untouched.
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { REDIS_URL, requireBroker, uniqueName, waitFor } from '../helpers/brokers.js'
import { RUN_JS, sleep, startBeat, stopAll, watchQueue, type BeatProc } from '../integration/beat/beat-procs.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

function tsq(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [RUN_JS, ...args], { encoding: 'utf8', timeout: 30_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

test('[tsq schedule] add, set, disable, enable, rm while two beats run', { timeout: 120_000 }, async (t) => {
  if (!(await requireBroker(t, 'redis'))) return
  const prefix = `${uniqueName('tsq-beat')}:`
  const queue = uniqueName('tsq-beat-q')
  const store = ['--scheduler', 'redis', '-b', REDIS_URL, '--key-prefix', prefix]
  const procs: BeatProc[] = []
  const { received, transport } = await watchQueue(REDIS_URL, queue)
  const count = (task: string) => received.filter((r) => r.task === task).length
  try {
    assert.equal(tsq('schedule', 'add', 'other', '--task', 'proj.mul', '--every', '1', '--queue', queue, ...store).status, 0)
    for (let i = 0; i < 2; i++) startBeat([...store, '--ha', 'lease', '--lock-timeout', '3', '--max-interval', '1'], procs)
    await waitFor(() => count('proj.mul') >= 2, { timeoutMs: 20_000, what: 'the other entry running' })

    const add = tsq(
      'schedule',
      'add',
      'dyn',
      '--task',
      'proj.add',
      '--every',
      '1',
      '--args',
      '[2, 2]',
      '--queue',
      queue,
      ...store,
      '--json',
    )
    assert.equal(add.status, 0, add.stderr)
    assert.equal(JSON.parse(add.stdout).name, 'dyn')
    await waitFor(() => count('proj.add') >= 3, { timeoutMs: 10_000, what: 'sends after add' })

    // Interval 1 s -> 30 s: at most one more send follows (one already in flight).
    assert.equal(tsq('schedule', 'set', 'dyn', '--every', '30', ...store).status, 0)
    await sleep(1500)
    const afterSet = count('proj.add')
    await sleep(3000)
    assert.equal(count('proj.add'), afterSet, 'no sends once the interval is 30 s')
    assert.equal(tsq('schedule', 'set', 'dyn', '--every', '1', ...store).status, 0)
    await waitFor(() => count('proj.add') >= afterSet + 2, { timeoutMs: 10_000, what: 'sends after set back to 1 s' })

    assert.equal(tsq('schedule', 'disable', 'dyn', ...store).status, 0)
    await sleep(1500)
    const afterDisable = count('proj.add')
    await sleep(3000)
    assert.equal(count('proj.add'), afterDisable, 'no sends while disabled')
    const shown = JSON.parse(tsq('schedule', 'show', 'dyn', ...store, '-j').stdout)
    assert.equal(shown.enabled, false)

    assert.equal(tsq('schedule', 'enable', 'dyn', ...store).status, 0)
    await waitFor(() => count('proj.add') >= afterDisable + 2, { timeoutMs: 10_000, what: 'sends after enable' })

    assert.equal(tsq('schedule', 'rm', 'dyn', ...store).status, 0)
    await sleep(1500)
    const afterRm = count('proj.add')
    const otherBefore = count('proj.mul')
    await sleep(3000)
    assert.equal(count('proj.add'), afterRm, 'no sends after rm')
    assert.ok(count('proj.mul') > otherBefore, 'the other entry kept running throughout')

    const ls = JSON.parse(tsq('schedule', 'ls', ...store, '--json').stdout) as Array<{ name: string }>
    assert.deepEqual(
      ls.map((r) => r.name),
      ['other'],
    )
    const missing = tsq('schedule', 'show', 'nope', ...store)
    assert.equal(missing.status, 64)
    assert.equal(missing.stderr.trim().split('\n').length, 1)
  } finally {
    await stopAll(procs)
    await transport.deleteQueue(queue).catch(() => undefined)
    await transport.close()
    // The beats declared the queue's exchange and binding too (as Celery does).
    await deleteCeleryQueues('redis', REDIS_URL, [queue])
    const redis = new Redis(REDIS_URL)
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length) await redis.del(...keys)
    await redis.quit()
  }
})
