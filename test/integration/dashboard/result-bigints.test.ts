// The dashboard's /api/task/result of a result holding ints past 2**53 (a
// Python worker's 2**64 + 1, read back as a BigInt): 200 with the digits as
// they were stored, as Flower's json writes them, not a 500.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { FileResultBackend } from '../../../src/backends/file-backend.js'
import { Cluster } from '../../../src/dashboard/cluster.js'
import { DashboardServer } from '../../../src/dashboard/server.js'
import { encodeResultMeta } from '../../../src/protocol/index.js'

describe('dashboard: a result with ints past 2**53', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-dash-bigints-'))
  const broker = join(dir, 'broker')
  let cluster: Cluster
  let server: DashboardServer
  let base = ''

  before(async () => {
    cluster = new Cluster({
      brokerUrl: `file://${broker}`,
      resultBackend: `file://${broker}`,
      maxTasks: 100,
      queues: ['celery'],
      queueInterval: 60,
    })
    await cluster.start()
    server = new DashboardServer({ cluster, port: 0, address: '127.0.0.1' })
    base = (await server.listen()).url.replace(/\/$/, '')
  })
  after(async () => {
    await server.close()
    await cluster.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('GET /api/task/result answers 200 with every digit', async () => {
    const backend = new FileResultBackend(broker)
    await backend.store(
      'big-1',
      encodeResultMeta({ taskId: 'big-1', status: 'SUCCESS', result: [18446744073709551617n, -(10n ** 40n), 7] }),
      'SUCCESS',
    )
    const res = await fetch(`${base}/api/task/result/big-1`)
    const text = await res.text()
    assert.equal(res.status, 200, text)
    assert.match(text, /"result": \[18446744073709551617, -10000000000000000000000000000000000000000, 7\]/)
    assert.equal((JSON.parse(text) as { state: string }).state, 'SUCCESS')
  })
})
