// AsyncResult.forget() on the Redis result backend deletes Celery's own key
// (`celery-task-meta-<id>`), as Celery's RedisBackend._forget does, so the
// task reads as PENDING again from either language.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { RedisResultBackend } from '../../../src/backends/redis-backend.js'
import { encodeResultMeta } from '../../../src/protocol/index.js'
import { brokerSkipReason } from '../../helpers/brokers.js'

const URL = 'redis://127.0.0.1:6379/1'
const skip = await brokerSkipReason('redis')

describe('forget() on the Redis result backend', { skip }, () => {
  let backend: RedisResultBackend
  let redis: Redis

  before(() => {
    backend = new RedisResultBackend(URL)
    redis = new Redis(URL)
  })

  after(async () => {
    await backend.close()
    redis.disconnect()
  })

  it('deletes celery-task-meta-<id>; the result then reads as unknown (PENDING)', async () => {
    const id = randomUUID()
    await backend.store(id, encodeResultMeta({ taskId: id, status: 'SUCCESS', result: 4 }), 'SUCCESS')
    assert.equal((await backend.get(id))?.result, 4)
    assert.equal(await redis.exists(`celery-task-meta-${id}`), 1)
    await backend.forget(id)
    assert.equal(await redis.exists(`celery-task-meta-${id}`), 0)
    assert.equal(await backend.get(id), null)
  })
})
