// task_publish_retry / task_publish_retry_policy against a real
// broker drop. A Redis server of the test's own (a free port, no persistence)
// is stopped under two apps that have both sent once: with task_publish_retry
// off the next send fails with one line once the driver gives up; with a
// policy the same send is tried again and lands once the server is back.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { createApp, type App } from '../../../src/app/app.js'
import { brokerSkipReason } from '../../helpers/brokers.js'
import { GroupProcess, sleep } from '../../helpers/process-group.js'
import { freePort } from '../../interop/helpers/tls-brokers.js'
import { startRedisServer } from '../../helpers/redis-server.js'

const skip = await brokerSkipReason('redis')

describe('[task_publish_retry, task_publish_retry_policy] a send across a broker drop', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-publish-retry-'))
  let port: number
  let server: GroupProcess | undefined
  const apps: App[] = []

  before(async () => {
    port = await freePort()
    server = await startRedisServer(port, dir)
  })
  after(async () => {
    for (const app of apps) await app.close().catch(() => undefined)
    await server?.stopWith(() => process.kill(server!.pid, 'SIGTERM'), 10_000)
    rmSync(dir, { recursive: true, force: true })
  })

  it('off: fails with one line; on: tried again until the broker is back, then sent', async () => {
    const url = `redis://127.0.0.1:${port}/0`
    const off = createApp({ name: 'noretry', broker: url, conf: { task_publish_retry: false } })
    const on = createApp({
      name: 'retry',
      broker: url,
      conf: { task_publish_retry_policy: { max_retries: 30, interval_start: 0.5, interval_step: 0.5, interval_max: 1 } },
    })
    apps.push(off, on)
    // Both connected before the drop.
    await off.sendTask('t.x', [], {}, { queue: 'before' })
    await on.sendTask('t.x', [], {}, { queue: 'before' })
    await server!.stopWith(() => process.kill(server!.pid, 'SIGTERM'), 10_000)
    server = undefined
    const failed = off.sendTask('t.x', [], {}, { queue: 'during' }).then(
      () => null,
      (e: Error) => e,
    )
    let sentId: string | undefined
    const sent = on.sendTask('t.x', [], {}, { queue: 'during' }).then((r) => (sentId = r.id))
    const error = await failed
    assert.ok(error, 'the send without retry fails while the broker is down')
    assert.match(error.message, /^redis broker redis:\/\/127\.0\.0\.1:\d+\/0: .*$/)
    assert.doesNotMatch(error.message, /\n/)
    // The retrying send's own first attempt fails the same way meanwhile; it is still pending.
    await sleep(2500)
    assert.equal(sentId, undefined)
    server = await startRedisServer(port, dir)
    await sent
    const raw = new Redis(url)
    try {
      const [stored] = await raw.lrange('during', 0, -1)
      assert.match(stored ?? '', new RegExp(sentId!))
    } finally {
      raw.disconnect()
    }
  })
})
