// The worker's event dispatcher (spec §5): worker-* events always (unless
// --without-heartbeat), task-* events only with -E / enable_events, buffered
// and sent as one `task.multi` list per loop tick or every 24 events.
import { hostname as osHostname, loadavg } from 'node:os'
import {
  buildEvent,
  encodeEvent,
  encodeEventBatch,
  eventRoutingKey,
  orderEventFields,
  utcoffsetHours,
  workerEventFields,
  workerSoftware,
} from '../protocol/index.js'
import type { LamportClock, Transport } from '../transport/index.js'
import { declareEventExchange, EVENT_EXCHANGE } from '../client/index.js'

export { declareEventExchange, EVENT_EXCHANGE }
const BATCH_MAX = 24

export class EventDispatcher {
  taskEvents: boolean
  private buffer: Record<string, unknown>[] = []
  private flushScheduled = false
  private declared = false
  readonly sw = workerSoftware('tsq', process.env.TSQ_VERSION ?? '0.1.0', osHostname() ? 'Linux' : process.platform)

  constructor(
    private readonly transport: Transport,
    private readonly hostname: string,
    private readonly clock: LamportClock,
    options: { taskEvents: boolean },
    private readonly onError: (e: Error) => void = () => undefined,
  ) {
    this.taskEvents = options.taskEvents
  }

  private async declare(): Promise<void> {
    if (this.declared) return
    await declareEventExchange(this.transport)
    this.declared = true
  }

  private event(type: string, fields: Record<string, unknown>): Record<string, unknown> {
    return buildEvent(type, orderEventFields(type, fields), {
      hostname: this.hostname,
      utcoffset: utcoffsetHours(),
      pid: process.pid,
      clock: this.clock.forward(),
      timestamp: Date.now() / 1000,
    })
  }

  private async publish(routingKey: string, body: string): Promise<void> {
    await this.declare()
    await this.transport.publish(EVENT_EXCHANGE, routingKey, {
      body: Buffer.from(body, 'utf8'),
      properties: {
        contentType: 'application/json',
        contentEncoding: 'utf-8',
        headers: { hostname: this.hostname },
        deliveryMode: 1,
        priority: 0,
      },
    })
  }

  /** worker-online / worker-heartbeat / worker-offline. */
  async sendWorker(
    type: 'worker-online' | 'worker-heartbeat' | 'worker-offline',
    state: { freq: number; active: number; processed: number },
  ): Promise<void> {
    const fields = workerEventFields({ ...state, loadavg: loadavg(), sw: this.sw })
    await this.publish(eventRoutingKey(type), encodeEvent(this.event(type, fields))).catch(this.onError)
  }

  /** The heartbeat control command's event: freq 5 and the sw_* fields only. */
  async sendControlHeartbeat(): Promise<void> {
    const fields = { freq: 5, sw_ident: this.sw.sw_ident, sw_ver: this.sw.sw_ver, sw_sys: this.sw.sw_sys }
    await this.publish('worker.heartbeat', encodeEvent(this.event('worker-heartbeat', fields))).catch(this.onError)
  }

  /** Buffers a task-* event; dropped unless task events are on (Celery's groups). */
  sendTask(type: string, fields: Record<string, unknown>): void {
    if (!this.taskEvents) return
    this.buffer.push(this.event(type, fields))
    if (this.buffer.length >= BATCH_MAX) void this.flush()
    else if (!this.flushScheduled) {
      this.flushScheduled = true
      setImmediate(() => void this.flush())
    }
  }

  /** Sends what is buffered as one `task.multi` list. */
  async flush(): Promise<void> {
    this.flushScheduled = false
    if (this.buffer.length === 0) return
    const batch = this.buffer
    this.buffer = []
    await this.publish('task.multi', encodeEventBatch(batch)).catch(this.onError)
  }
}
