// A task signed by Python Celery 5.2.6 (the settings of Celery's own
// t/integration/test_security.py) reaching a tsq worker that has no security
// settings, as in that test: the worker refuses it with one line naming the
// task, does not requeue it, never runs it, and runs the next plain task.
// (Celery 5.2.6's own worker dies on it: ValueError in Request.__init__.)
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createApp, type App } from '../../src/index.js'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { makeTestCerts, opensslSkipReason, type TestCerts } from './helpers/certs.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { pySecClient, startTsqSecWorker, type SecSide } from './helpers/security-peers.js'
import type { TsqWorker } from './worker-helpers/tsq-worker.js'

const cases = [
  { kind: 'amqp' as const, broker: AMQP_URL },
  { kind: 'redis' as const, broker: REDIS_URL },
]
const opensslSkip = opensslSkipReason()
const skips = new Map(await Promise.all(cases.map(async (c) => [c.kind, (await brokerSkipReason(c.kind)) || opensslSkip] as const)))

for (const c of cases) {
  describe(
    `a signed task on a tsq worker without security settings: ${c.kind} broker`,
    { skip: skips.get(c.kind), timeout: 180_000 },
    () => {
      let certs: TestCerts
      let worker: TsqWorker | undefined
      let app: App | undefined
      const queue = uniqueName(`sec-plain-${c.kind}`)
      const side = (conf: Record<string, unknown>): SecSide => ({ broker: c.broker, backend: REDIS_URL, queue, conf })

      before(async () => {
        certs = makeTestCerts()
        worker = await startTsqSecWorker(side({}))
        app = createApp({ name: 'sec', broker: c.broker, resultBackend: REDIS_URL })
      })

      after(async () => {
        await app?.close().catch(() => undefined)
        await worker?.stop()
        await deleteCeleryQueues(c.kind, c.broker, [queue])
        certs?.cleanup()
      })

      it('refuses it once with a clear line, never runs it, then runs a plain task', async () => {
        // test_security.py's _prepare_setup, on the Python client only.
        const signed = {
          security_key: certs.python.key,
          security_certificate: certs.python.cert,
          security_cert_store: certs.validStoreGlob,
          task_serializer: 'auth',
          event_serializer: 'auth',
          accept_content: ['auth'],
          result_accept_content: ['json'],
        }
        const logStart = worker!.log.length
        const sent = await pySecClient(side(signed), ['send', 'sec.add', '[1, 1]', 'auth'])
        const line = await waitFor(() => worker!.log.slice(logStart).match(/^.*Refusing to deserialize signed content.*$/m)?.[0], {
          timeoutMs: 30_000,
          what: `the refusal line${worker!.logTail()}`,
        })
        assert.match(
          line,
          /ERROR\/MainProcess\] Received invalid task message \(rejected, not requeued\): Refusing to deserialize signed content \(application\/data\): this worker has no security settings to verify it \(security_cert_store\)/,
        )
        assert.ok(line.includes(`sec.add[${sent.id}]`), line)

        const plain = await pySecClient(side({}), ['call', 'sec.add', '[2, 3]', '30'])
        assert.deepEqual(plain.result, { int: '5' }, JSON.stringify(plain) + worker!.logTail())
        // Rejected without requeue: delivered once, so refused once.
        assert.equal((worker!.log.slice(logStart).match(/Refusing to deserialize signed content/g) ?? []).length, 1, worker!.logTail())
        assert.equal(await app!.asyncResult(sent.id!).state, 'PENDING')
      })
    },
  )
}
