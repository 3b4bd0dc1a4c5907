// The transport contract as tests: every broker runs these same cases
// (kombu's t/integration/common.py). A case skips only when capabilities say
// so, and prints why.
import { afterEach, describe } from 'node:test'
import type { Transport } from '../../../../src/transport/transport.js'
import { ackRejectCases } from './ack-reject.js'
import { basicCases } from './basic.js'
import { closeRequeueCases } from './close-requeue.js'
import { ConformanceContext, type ConformanceOptions } from './context.js'
import { crashCases } from './crash.js'
import { fanoutCases } from './fanout.js'
import { prefetchCases } from './prefetch.js'
import { reconnectCases } from './reconnect.js'
import { ttlCases } from './ttl.js'

export type { ConformanceOptions } from './context.js'

export function describeTransportConformance(name: string, factory: () => Promise<Transport>, opts: ConformanceOptions): void {
  describe(`${name} transport conformance`, { skip: opts.skip ?? false }, () => {
    const ctx = new ConformanceContext(name, factory, opts)
    afterEach(() => ctx.cleanup(), { timeout: 60_000 })
    describe('basic', () => basicCases(ctx))
    describe('ack and reject', () => ackRejectCases(ctx))
    describe('prefetch', () => prefetchCases(ctx))
    describe('fanout', () => fanoutCases(ctx))
    describe('reply-queue expiry', () => ttlCases(ctx))
    describe('close requeues', () => closeRequeueCases(ctx))
    describe('crash', () => crashCases(ctx))
    describe('reconnect', () => reconnectCases(ctx))
  })
}
