import { createTransport } from '../../../src/transport/registry.js'
import { after } from 'node:test'
import { brokerSkipReason, deleteRedisBindingsOfThisProcess, REDIS_URL } from '../../helpers/brokers.js'
import { describeTransportConformance } from './conformance/index.js'
import { killRedisConnections } from './conformance/kill-connections.js'

const skip = await brokerSkipReason('redis')

/** kombu restores unacked messages after the visibility timeout; short here so the crash case ends soon. */
function withShortVisibility(url: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}visibility_timeout=2`
}

describeTransportConformance('redis', () => createTransport(REDIS_URL), {
  kind: 'redis',
  killConnections: () => killRedisConnections(REDIS_URL),
  crashUrl: withShortVisibility(REDIS_URL),
  skip,
})

after(async () => {
  if (!skip) await deleteRedisBindingsOfThisProcess(REDIS_URL, 'tsq-conf-redis')
})
