// Python's app.events.Receiver (what `celery events` and
// Flower use) sees a tsq worker's heartbeats and task events with Celery's fields.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { pyClient, startTsqWorker, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'

type Event = Record<string, unknown>

const cases = [
  { kind: 'amqp' as const, broker: AMQP_URL, pool: 'prefork' as const },
  { kind: 'redis' as const, broker: REDIS_URL, pool: 'solo' as const },
]

/** Spec §5.2/§5.3: every event's common fields and the type's own, as Celery sends them. */
const FIELDS: Record<string, string[]> = {
  'worker-heartbeat': ['freq', 'active', 'processed', 'loadavg', 'sw_ident', 'sw_ver', 'sw_sys'],
  'task-received': ['uuid', 'name', 'args', 'kwargs', 'root_id', 'parent_id', 'retries', 'eta', 'expires'],
  'task-started': ['uuid'],
  'task-succeeded': ['uuid', 'result', 'runtime'],
}
const COMMON = ['hostname', 'utcoffset', 'pid', 'clock', 'timestamp', 'type', 'local_received']

for (const c of cases) {
  const skip = await brokerSkipReason(c.kind)
  describe(`spec §5: a Python event receiver watches a tsq worker (${c.kind}, ${c.pool})`, { skip }, () => {
    const env: WiEnv = { broker: c.broker, backend: 'redis://127.0.0.1:6379/1', queue: uniqueName(`tsq-wi-ev-${c.kind}`) }
    let worker: TsqWorker | undefined

    before(async () => {
      worker = await startTsqWorker({ env, pool: c.pool, concurrency: 2, events: true })
    })

    after(async () => {
      await worker?.stop()
      await deleteCeleryQueues(c.kind, c.broker, [env.queue])
    })

    it("heartbeats and task-received/started/succeeded arrive with Celery's fields", async () => {
      const node = worker!.nodename
      const out = await pyClient<{ task_id: string; events: Event[] }>(env, ['events', node, '25'], 60_000)
      const byType = (type: string) =>
        out.events.filter((e) => e.type === type && (type === 'worker-heartbeat' ? 'active' in e : e.uuid === out.task_id))
      const log = `events: ${JSON.stringify(out.events).slice(0, 3000)}\n--- worker log ---\n${worker!.logTail(2000)}`
      for (const [type, fields] of Object.entries(FIELDS)) {
        const [event] = byType(type)
        assert.ok(event, `no ${type} event from ${node}\n${log}`)
        for (const f of [...COMMON, ...fields]) assert.ok(f in event, `${type} lacks ${f}: ${JSON.stringify(event)}`)
        assert.equal(event.hostname, node)
      }
      const beat = byType('worker-heartbeat')[0]!
      assert.equal(typeof beat.sw_ident, 'string')
      assert.equal(typeof beat.sw_ver, 'string')
      assert.equal(beat.sw_sys, 'Linux')
      assert.equal(typeof beat.freq, 'number')
      assert.equal((beat.loadavg as number[]).length, 3)
      const received = byType('task-received')[0]!
      assert.equal(received.name, 'proj.add')
      // argsrepr from the message: the client sent a list.
      assert.equal(received.args, '[20, 22]')
      assert.equal(byType('task-succeeded')[0]!.result, '42')
    })
  })
}
