// What --health-port takes (PORT or HOST:PORT), where its value comes from
// (flag, then the app's worker_health_port), and what a worker's and a beat's
// /readyz say in each of their states.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseHealthListen } from '../../../src/process/health/index.js'
import { healthOptionsOf, workerUnreadiness } from '../../../src/worker/worker-health.js'
import { beatUnreadiness } from '../../../src/beat/run-beat.js'

describe('--health-port', () => {
  it('is a port, on every interface unless a host is given', () => {
    assert.deepEqual(parseHealthListen(8080), { host: '0.0.0.0', port: 8080 })
    assert.deepEqual(parseHealthListen('127.0.0.1:9'), { host: '127.0.0.1', port: 9 })
    assert.deepEqual(parseHealthListen('[::1]:0'), { host: '::1', port: 0 })
  })

  it('refuses anything else as a usage error', () => {
    for (const bad of ['', 'x', '70000', '1.5', 'host:', ':80'])
      assert.throws(() => parseHealthListen(bad), { code: 'USAGE', message: /--health-port: expected PORT or HOST:PORT/ }, bad)
  })

  it('comes from the flag, else worker_health_port; none under --watch', () => {
    const warnings: string[] = []
    const warn = (line: string) => warnings.push(line)
    assert.equal(healthOptionsOf({}, {}, false, warn), null)
    assert.deepEqual(healthOptionsOf({}, { worker_health_port: 8080, worker_health_stuck_after: 5 }, false, warn), {
      listen: 8080,
      stuckAfterS: 5,
    })
    assert.deepEqual(healthOptionsOf({ port: '9000', stuckAfter: 2 }, { worker_health_port: 8080 }, false, warn), {
      listen: '9000',
      stuckAfterS: 2,
    })
    assert.equal(healthOptionsOf({ port: '9000' }, {}, true, warn), null)
    assert.match(warnings.join('\n'), /not served under --watch/)
  })
})

describe('/readyz', () => {
  it('is ready for a worker that runs with its broker connection up', () => {
    assert.equal(workerUnreadiness('RUNNING', true), null)
    assert.match(workerUnreadiness('STARTING', true)!, /starting/)
    assert.match(workerUnreadiness('RUNNING', false)!, /broker connection is lost/)
    assert.match(workerUnreadiness('WARM_SHUTDOWN', true)!, /shutting down \(warm shutdown\)/)
  })

  it('is ready for a beat whose loop goes through, leader or standby, until a tick fails or hangs', () => {
    assert.equal(beatUnreadiness(false, null, null, 100_000), null)
    assert.equal(beatUnreadiness(false, null, 90_000, 100_000), null)
    assert.match(beatUnreadiness(false, null, 80_000, 100_000)!, /a tick has waited 20 s/)
    assert.match(beatUnreadiness(false, 'ECONNREFUSED', null, 100_000)!, /the last tick failed: ECONNREFUSED/)
    assert.equal(beatUnreadiness(true, null, null, 0), 'stopping')
  })
})
