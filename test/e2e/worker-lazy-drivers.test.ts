// A pool process that runs no locked task loads no broker driver for the lock
// stores (issue 21, for issue 19's memory per process): on the embedded file://
// broker, a prefork child of a worker whose app has no locks never resolves
// ioredis or amqplib. Every module a process resolves is traced by a preloaded
// loader hook (test/fixtures/module-trace/preload.mjs), one file per pid.
import assert from 'node:assert/strict'
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { ROOT, embeddedBrokerEnv, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'

const DRIVER = /\/node_modules\/(ioredis|amqplib)\//

describe('broker drivers in a prefork child (file://, no locked task)', () => {
  const home = tempTsqHome()
  let worker: SpawnedWorker | undefined

  after(async () => {
    await worker?.stop()
    rmSync(home, { recursive: true, force: true })
  })

  it('the child resolves the lock layer but neither ioredis nor amqplib', async () => {
    const traces = join(home, 'traces')
    mkdirSync(traces)
    const preload = join(ROOT, 'test/fixtures/module-trace/preload.mjs')
    worker = await startWorker(
      [
        '-A',
        join(ROOT, 'test/fixtures/tasks/noop-tasks.js'),
        '-P',
        'prefork',
        '-c',
        '1',
        '-l',
        'INFO',
        '--without-mingle',
        '--without-gossip',
      ],
      {
        env: embeddedBrokerEnv(home, { NODE_OPTIONS: `--import=${preload}`, TSQ_TEST_TRACE_DIR: traces }),
        nodename: `lazydrivers-${process.pid}@${hostname()}`,
        readyTimeoutMs: 90_000,
      },
    )
    // Ready: the child has loaded the task module, and with it everything it loads before its first task.
    const children = readdirSync(traces).filter((pid) => Number(pid) !== worker!.child.pid)
    assert.equal(children.length, 1, `one pool process traced besides the worker ${worker.child.pid}: ${readdirSync(traces).join(', ')}`)
    const resolved = readFileSync(join(traces, children[0]!), 'utf8').split('\n')
    // The trace sees the lock layer (so a driver it loaded would show too).
    assert.ok(
      resolved.some((url) => url.endsWith('/dist/locks/open-store.js')),
      'the child loaded src/locks/open-store',
    )
    assert.deepEqual(
      resolved.filter((url) => DRIVER.test(url)),
      [],
      'drivers the child loaded',
    )
  })
})
