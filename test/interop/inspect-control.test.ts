// Interop with Python Celery 5.2.6 over RabbitMQ and Redis: tsq's remote
// control and task calls against a real Celery worker (spec §3). One worker
// per broker serves every case, so the order of the cases matters: the
// comparison cases first, then the ones that change the worker, shutdown last.
import { after, before, describe } from 'node:test'
import { brokerSkipReason } from '../helpers/brokers.js'
import { registerBehaviourCases } from './helpers/behaviour-suite.js'
import { registerCompareCases } from './helpers/compare-suite.js'
import { InteropContext } from './helpers/context.js'

// TSQ_INTEROP_BROKERS=redis (or amqp) runs one broker only.
const only = process.env.TSQ_INTEROP_BROKERS?.split(',')

for (const kind of ['amqp', 'redis'] as const) {
  const skip = only && !only.includes(kind) ? `not in TSQ_INTEROP_BROKERS=${only.join(',')}` : await brokerSkipReason(kind)
  describe(`interop with celery 5.2.6 worker on ${kind}`, { skip }, () => {
    const x = new InteropContext(kind)
    before(() => x.setUp(), { timeout: 60_000 })
    after(() => x.tearDown(), { timeout: 60_000 })
    registerCompareCases(() => x)
    registerBehaviourCases(() => x)
  })
}
