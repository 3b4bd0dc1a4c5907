// A message a BRPOP or a claim returned, handed to its consumer: recorded as
// unacked first (unless the consumer is noAck), or put back at the head of its
// list when no consumer can take it now.
import type { Redis } from 'ioredis'
import type { Delivery, DeliveryHandler } from '../../transport.js'
import { parseEnvelope, type KombuEnvelope } from '../../kombu-envelope.js'
import type { AckTracker } from './ack-tracker.js'
import { makeDelivery, type HeldDelivery } from './deliveries.js'
import type { ConsumerSet, ListConsumer } from './list-consumers.js'
import type { UnackedStore } from './unacked.js'

export class HandOver {
  constructor(
    private readonly consumers: ConsumerSet,
    private readonly acks: AckTracker,
    private readonly unacked: UnackedStore,
    private readonly cmd: Redis,
    /** Messages popped while the transport closes go back to their lists. */
    private readonly isOpen: () => boolean,
    private readonly emitError: (error: unknown) => void,
  ) {}

  /**
   * A BRPOP or a claim returned a message: record it as unacked (unless noAck)
   * and hand it over. Returns a promise only when something must be waited
   * for: a claimed message (already recorded) goes to its consumer within the
   * call, as the claim loop hands a batch over.
   */
  popped(queue: string, key: string, raw: string, recordedAs?: string): void | Promise<void> {
    const consumer = this.isOpen() ? this.consumers.pick(queue) : undefined
    if (!consumer || (recordedAs !== undefined && consumer.noAck)) return this.putBack(key, raw, recordedAs)
    this.consumers.rotate(queue)
    let envelope
    try {
      envelope = parseEnvelope(raw)
    } catch (error) {
      if (recordedAs !== undefined)
        return this.unacked.remove(recordedAs).then(
          () => this.emitError(error),
          () => this.emitError(error),
        )
      this.emitError(error)
      return
    }
    if (consumer.noAck) {
      dispatch(consumer.handler, makeDelivery(envelope, queue), this.emitError)
      return
    }
    const tag = envelope.properties.delivery_tag
    const info = envelope.properties.delivery_info
    // Recorded under another tag than the one this process acks by (a tag that is not a string,
    // which the envelope's reader replaces): recorded again under the right one, then the other goes.
    const misrecorded = recordedAs !== undefined && recordedAs !== tag ? recordedAs : undefined
    let tracking
    try {
      tracking = this.acks.track(
        consumer,
        tag,
        raw,
        String(info.exchange ?? ''),
        String(info.routing_key ?? ''),
        recordedAs !== undefined && misrecorded === undefined,
      )
    } catch (error) {
      return this.notTracked(key, raw, error)
    }
    if (tracking instanceof Promise) {
      return tracking.then(
        (tracked) => {
          // Written under the right tag first: the stray record goes only once nothing can be lost.
          if (misrecorded !== undefined) this.unacked.remove(misrecorded).catch((error: unknown) => this.emitError(error))
          this.handTracked(consumer, envelope, queue, tracked)
        },
        (error: unknown) => this.notTracked(key, raw, error),
      )
    }
    this.handTracked(consumer, envelope, queue, tracking)
  }

  /** Cancelled or full while the pop was in flight: back to the head of its list. */
  private async putBack(key: string, raw: string, recordedAs: string | undefined): Promise<void> {
    if (recordedAs !== undefined)
      await this.unacked.restore(recordedAs, { leftmost: false }).catch((error: unknown) => this.emitError(error))
    else await this.cmd.rpush(key, raw).catch((error: unknown) => this.emitError(error))
  }

  private async notTracked(key: string, raw: string, error: unknown): Promise<void> {
    await this.cmd.rpush(key, raw).catch(() => undefined)
    this.emitError(error)
  }

  private handTracked(consumer: ListConsumer, envelope: KombuEnvelope, queue: string, tracked: HeldDelivery): void {
    dispatch(consumer.handler, makeDelivery(envelope, queue, tracked), this.emitError)
  }
}

/** Runs a consumer's handler; what it throws or rejects with is said, not lost. */
export function dispatch(handler: DeliveryHandler, delivery: Delivery, emitError: (error: unknown) => void): void {
  try {
    const result = handler(delivery)
    if (result && typeof result.then === 'function') result.then(undefined, (error: unknown) => emitError(error))
  } catch (error) {
    emitError(error)
  }
}
