// What the task path is given by the worker that runs it.
import type { App } from '../../app/index.js'
import type { ResultBackend } from '../../backends/index.js'
import type { Logger } from '../../process/index.js'
import type { RateStore } from '../../locks/index.js'
import type { BodyDecoder } from '../../protocol/index.js'
import type { Transport } from '../../transport/index.js'
import type { EventDispatcher } from '../events.js'
import type { LimitedSet } from '../control/limited-set.js'
import type { Pool } from '../pools/pool.js'

export interface RunnerOptions {
  app: App
  /** accept_content and the certificate store (app.taskDecoder()); JSON only when absent. */
  decoder?: BodyDecoder
  transport: Transport
  pool: Pool
  backend: ResultBackend | null
  events: EventDispatcher
  revoked: LimitedSet
  log: Logger
  hostname: string
  acksLate: boolean
  timeLimit: number | null
  softTimeLimit: number | null
  /** Called when held ETA tasks change, so the consumer can widen its prefetch. */
  onScheduledChange: (count: number) => void
  /** Called after each task ends (the worker gives back prefetch held back after a reconnect). */
  onTaskDone?: () => void
  /** Where an ETA task waits when it is far away; the worker lowers `afterSeconds` when the broker shows a shorter timeout. */
  etaDelay?: EtaDelayPolicy
  /** The cluster rate limits' store; absent, opened from the app's settings on first use (a test gives its own). */
  rateStore?: RateStore
}

/**
 * RabbitMQ closes a channel that holds a delivery unacknowledged longer than
 * its consumer_timeout (30 min by default), and a worker holds an ETA task
 * unacknowledged until its time. So an ETA further away than `afterSeconds`
 * goes to the broker's delayed delivery, which gives it back to its queue at
 * its time, for any worker.
 */
export interface EtaDelayPolicy {
  enabled: boolean
  afterSeconds: number
  /**
   * Queues whose consumers have a static prefetch (quorum queues): an ETA
   * more than BROKER_QUEUE_HOLD_S away goes to the broker's delayed delivery
   * whatever afterSeconds says, so the worker holds none of them.
   */
  brokerQueues?: Set<string>
}
