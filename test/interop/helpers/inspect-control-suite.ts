// The suite of test/interop/inspect-control-*.test.ts (one file per broker, so each lane runs one):
// tsq's remote control and task calls against a real Python Celery 5.2.6 worker (spec §3). One worker
// per broker serves every case, so the order of the cases matters: the comparison cases first, then the
// ones that change the worker, shutdown last.
import { after, before, describe } from 'node:test'
import { brokerSkipReason } from '../../helpers/brokers.js'
import { registerBehaviourCases } from './behaviour-suite.js'
import { registerCompareCases } from './compare-suite.js'
import { InteropContext } from './context.js'

export async function inspectControlSuite(kind: 'amqp' | 'redis'): Promise<void> {
  // TSQ_INTEROP_BROKERS=redis (or amqp) runs one broker only.
  const only = process.env.TSQ_INTEROP_BROKERS?.split(',')
  const skip = only && !only.includes(kind) ? `not in TSQ_INTEROP_BROKERS=${only.join(',')}` : await brokerSkipReason(kind)
  describe(`interop with celery 5.2.6 worker on ${kind}`, { skip }, () => {
    const x = new InteropContext(kind)
    before(() => x.setUp(), { timeout: 60_000 })
    after(() => x.tearDown(), { timeout: 60_000 })
    registerCompareCases(() => x)
    registerBehaviourCases(() => x)
  })
}
