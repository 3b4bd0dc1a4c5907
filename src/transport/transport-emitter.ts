// The Transport contract's events (transport.ts), typed, on Node's
// EventEmitter: what every broker extends to say connection:lost, restored,
// blocked and the rest to its listeners.
import { EventEmitter } from 'node:events'
import type { TransportEvents } from './transport.js'

export class TransportEmitter extends EventEmitter {
  override on<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this {
    return super.on(event, listener)
  }

  override off<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this {
    return super.off(event, listener)
  }
}
