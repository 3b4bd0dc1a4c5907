// Task locks on the threads pool (-P threads), Redis store: a lock is released
// in every ending of a run. Threads share the worker's pid, so a thread's lock
// names the thread (`<node>:<pid>/<thread>`), and the worker frees the locks
// of a thread it terminates (hard time limit, revoke --terminate). The task
// holds a 600 s lease: a next run of the key that starts at all was let in by
// a release, not by the lease running out.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { sendTask } from '../../src/client/send-task.js'
import { lockIdFor } from '../../src/locks/index.js'
import { createTransport, type Transport } from '../../src/transport/index.js'
import { brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'

const URL = REDIS_URL.replace(/\/\d*$/, '/8')
const APP = 'test/fixtures/tasks/locks-tasks.js'

interface Event {
  key: string
  id: string
  event: string
  at: number
  token: number
}

describe('task locks on the threads pool (Redis)', { skip: await brokerSkipReason('redis'), timeout: 300_000 }, () => {
  const queue = uniqueName('locks-threads-q')
  const log = uniqueName('locks-threads-log')
  const prefix = `${uniqueName('lt')}-`
  const ids = new Set<string>()
  let redis: Redis
  let transport: Transport
  let worker: SpawnedWorker

  before(async () => {
    redis = new Redis(URL)
    transport = await createTransport(URL)
    await transport.connect()
    worker = await startWorker(
      [
        '-A',
        APP,
        '-b',
        URL,
        '--result-backend',
        URL,
        '-Q',
        queue,
        '-P',
        'threads',
        '-c',
        '2',
        '-l',
        'INFO',
        '--without-mingle',
        '--without-gossip',
      ],
      {
        nodename: uniqueName('locks-threads') + '@h',
        readyTimeoutMs: 120_000,
        env: { TSQ_LOCK_LOG: log, TSQ_TEST_REDIS_URL: URL },
      },
    )
  })
  after(async () => {
    await worker?.stop('SIGKILL').catch(() => undefined)
    await transport?.close({ requeueUnacked: false }).catch(() => undefined)
    if (redis) {
      const locks = [...ids].flatMap((id) => [`tsq:lock:${id}`, `tsq:lock-token:${id}`])
      const holders = worker ? await redis.keys(`tsq:lock-holder:${worker.nodename}:*`) : []
      await redis.del(log, queue, ...locks, ...holders).catch(() => undefined)
      redis.disconnect()
    }
  })

  const send = (key: string, how: string, extra: { timeLimit?: number; softTimeLimit?: number; id?: string } = {}) => {
    const args = [prefix + key, how]
    ids.add(lockIdFor('locks.ending', { key: ['key'] }, args, {}, ['key', 'how']))
    return sendTask(transport, 'locks.ending', { args, queue, ...extra })
  }

  async function startsOf(key: string, n: number): Promise<Event[]> {
    return waitFor(
      async () => {
        const starts = (await redis.lrange(log, 0, -1))
          .map((l) => JSON.parse(l) as Event)
          .filter((e) => e.key === prefix + key && e.event === 'start')
        return starts.length >= n ? starts : null
      },
      { timeoutMs: 60_000, intervalMs: 25, what: `${n} start(s) of ${key}` },
    )
  }

  /** Runs `first` (which ends as it ends), then a plain run of the same key: it starts only if the first's lock was released. */
  async function nextStartsAfter(key: string, first: () => Promise<string>): Promise<void> {
    await first()
    const [start] = await startsOf(key, 1)
    await send(key, 'ok')
    const [, next] = await startsOf(key, 2)
    assert.ok(next!.token > start!.token, 'the next run took the lock with a larger token')
  }

  it('success', () => nextStartsAfter('success', () => send('success', 'ok')))
  it('failure', () => nextStartsAfter('failure', () => send('failure', 'fail')))
  it('retry', () => nextStartsAfter('retry', () => send('retry', 'retry')))
  it('soft time limit', () => nextStartsAfter('soft', () => send('soft', 'soft', { softTimeLimit: 1 })))
  it("hard time limit: the worker frees the terminated thread's lock", async () => {
    await nextStartsAfter('hard', () => send('hard', 'hard', { timeLimit: 2 }))
    assert.match(worker.output(), /Freed 1 lock\(s\) held by lost pool thread \d+/)
  })
  it("revoke --terminate: the worker frees the terminated thread's lock", async () => {
    const id = uniqueName('lt-terminate')
    await nextStartsAfter('terminate', async () => {
      await send('terminate', 'terminate', { id })
      await startsOf('terminate', 1)
      const r = await runTsq(['control', 'revoke', id, '--terminate', '-b', URL, '-d', worker.nodename], { timeoutMs: 60_000 })
      assert.equal(r.code, 0, r.stderr)
      return id
    })
  })
})
