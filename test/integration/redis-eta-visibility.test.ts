// Celery's duplicate-ETA bug: kombu indexes an unacked message by its fetch
// time, so an ETA task held past the visibility timeout goes to a second
// worker. tsq moves the index score to the ETA (issue 3, item 4).
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { brokerSkipReason, deleteRedisBindingsOfThisProcess, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'

const skip = await brokerSkipReason('redis')

describe("Redis: an ETA task's visibility timeout counts from its ETA", { skip }, () => {
  const redis = new Redis(REDIS_URL)
  const queue = uniqueName('tsq-eta')
  let worker: SpawnedWorker | undefined
  after(async () => {
    await worker?.stop('SIGQUIT')
    await runTsq(['purge', '-f', '-Q', queue, '-b', REDIS_URL])
    redis.disconnect()
    await deleteRedisBindingsOfThisProcess(REDIS_URL, 'tsq-eta')
  })

  it('unacked_index holds the ETA, not the fetch time', async () => {
    worker = await startWorker(
      ['-A', 'examples/tasks.js', '-b', REDIS_URL, '-Q', queue, '-c', '1', '-l', 'INFO', '--without-heartbeat', '--without-mingle'],
      { nodename: `${queue}@testhost` },
    )
    const r = await runTsq(['call', 'proj.add', '--args', '[1, 1]', '--countdown', '600', '-Q', queue, '-b', REDIS_URL])
    assert.equal(r.code, 0, r.stderr)
    const id = r.stdout.trim()
    const sentAt = Date.now() / 1000
    const score = await waitFor(
      async () => {
        const entries = await redis.hgetall('unacked')
        for (const [tag, value] of Object.entries(entries)) {
          if (!value.includes(id)) continue
          const s = await redis.zscore('unacked_index', tag)
          if (s && Number(s) > sentAt + 300) return Number(s)
        }
        return undefined
      },
      { timeoutMs: 15_000, what: 'the unacked entry of the ETA task with its score moved to the ETA' },
    )
    assert.ok(Math.abs(score - (sentAt + 600)) < 60, `score ${score} should be close to the ETA ${sentAt + 600}`)
  })
})
