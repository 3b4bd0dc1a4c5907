// A failover list on every command that takes -b, against the test
// broker: the list's first URL is a port nothing listens on, the second the
// broker. The worker, `tsq call`, `tsq status` and `tsq inspect` get through
// the second; the banner and the log mask every password of the list;
// `inspect stats` names the node in use and lists the alternates; a bad
// broker_failover_strategy stops the worker with one line. The cluster
// itself (nodes stopping under load) is test/interop/rabbitmq-cluster-*.test.ts.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { freePort } from '../interop/helpers/tls-brokers.js'

const skip = await brokerSkipReason('amqp')
const APP = 'test/fixtures/tasks/noop-tasks.js'
const dir = mkdtempSync(join(tmpdir(), 'tsq-failover-'))
const workers: SpawnedWorker[] = []

after(async () => {
  await Promise.all(workers.map((w) => w.stop()))
  rmSync(dir, { recursive: true, force: true })
})

/** The test broker's URL with a password of its own, so a leak can be looked for. */
function withPassword(url: string, password: string): string {
  return url.replace(/^amqp:\/\/([^:@/]+)(:[^@/]*)?@/, `amqp://$1:${password}@`)
}

describe('broker failover lists (-b "url1;url2")', { skip }, () => {
  it(
    'worker, call, status and inspect get through the second URL; passwords masked; stats name the node in use',
    { timeout: 120_000 },
    async () => {
      const deadPort = await freePort()
      const vhostPath = new URL(AMQP_URL).pathname
      const dead = `amqp://guest:hunter2@127.0.0.1:${deadPort}${vhostPath}`
      const list = `${dead};${AMQP_URL}`
      const queue = uniqueName('tsq-failover')
      const node = `${uniqueName('fo')}@test`
      const w = await startWorker(
        ['-A', APP, '-b', list, '-Q', queue, '-P', 'solo', '-l', 'INFO', '--without-mingle', '--without-gossip'],
        { nodename: node, readyTimeoutMs: 60_000 },
      )
      workers.push(w)
      assert.match(
        w.output(),
        new RegExp(`\\.> transport: +amqp://guest:\\*\\*@127\\.0\\.0\\.1:${deadPort}[^;]*;amqp://`),
        'the banner lists the whole list, masked',
      )
      assert.doesNotMatch(w.output(), /hunter2/)
      assert.match(w.output(), /Connected to amqp:\/\/[^:]+:\*\*@127\.0\.0\.1:5672\//, 'the log names the node connected to')

      const call = await runTsq(['call', 'proj.noop', '-b', list, '-Q', queue])
      assert.equal(call.code, 0, call.stderr)
      const id = call.stdout.trim()
      await waitFor(() => w.output().includes(`proj.noop[${id}] succeeded`), { timeoutMs: 30_000 })

      const status = await runTsq(['status', '-b', list, '--json'])
      assert.equal(status.code, 0, status.stderr)
      assert.ok(status.stdout.includes(node), `status lists ${node}: ${status.stdout}`)

      const stats = await runTsq(['inspect', 'stats', '-b', list, '-d', node, '--json'])
      assert.equal(stats.code, 0, stats.stderr)
      const broker = (JSON.parse(stats.stdout) as Record<string, { broker: Record<string, unknown> }>)[node]!.broker
      assert.equal(broker.port, 5672)
      assert.equal(broker.failover_strategy, 'round-robin')
      assert.deepEqual((broker.alternates as string[]).length, 2)
      assert.doesNotMatch(JSON.stringify(broker), /hunter2/)

      const conf = await runTsq(['inspect', 'conf', '-b', list, '-d', node, '--json'])
      assert.equal(conf.code, 0, conf.stderr)
      assert.doesNotMatch(conf.stdout, /hunter2/)
    },
  )

  it('all URLs down: one line naming each (masked), exit 69', { timeout: 60_000 }, async () => {
    const [a, b] = [await freePort(), await freePort()]
    const r = await runTsq(['status', '-b', `amqp://guest:hunter2@127.0.0.1:${a}//;amqp://guest:hunter2@127.0.0.1:${b}//`])
    assert.equal(r.code, 69)
    assert.match(
      r.stderr,
      new RegExp(`cannot connect to any broker of amqp://guest:\\*\\*@127\\.0\\.0\\.1:${a}//;amqp://guest:\\*\\*@127\\.0\\.0\\.1:${b}//`),
    )
    assert.doesNotMatch(r.stderr, /hunter2/)
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
  })

  it('bad broker_failover_strategy: the worker stops at start-up with one line, exit 64', { timeout: 60_000 }, async () => {
    const config = join(dir, 'conf.json')
    writeFileSync(config, JSON.stringify({ broker_failover_strategy: 'random' }))
    const r = await runTsq(
      [
        'worker',
        '-A',
        APP,
        '--config',
        config,
        '-b',
        `${withPassword(AMQP_URL, 'guest')};${AMQP_URL}`,
        '-n',
        `${uniqueName('bad')}@test`,
        '-Q',
        uniqueName('tsq-failover'),
      ],
      { timeoutMs: 60_000 },
    )
    assert.equal(r.code, 64, r.stderr)
    assert.match(r.stderr, /broker_failover_strategy = "random": expected round-robin or shuffle/)
  })
})
