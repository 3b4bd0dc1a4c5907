// Turns a kombu envelope into the transport's Delivery, with ack/reject wired to
// whatever settles it (the unacked hash for acking consumers, nothing for noAck).
import type { Delivery } from '../../transport.js'
import { envelopeBody, envelopeProperties, type KombuEnvelope } from '../../kombu-envelope.js'

export interface Settler {
  ack(): Promise<void>
  reject(requeue: boolean): Promise<void>
}

const NO_OP: Settler = {
  ack: async () => undefined,
  reject: async () => undefined,
}

/** A delivery the transport tracks: its settler, and what the Delivery's isLive and deferVisibility ask of it. */
export interface HeldDelivery extends Settler {
  isLive(): boolean
  defer(untilUnixSeconds: number): Promise<void>
}

export function makeDelivery(envelope: KombuEnvelope, queue: string, settler: Settler | HeldDelivery = NO_OP): Delivery {
  const info = envelope.properties.delivery_info
  const delivery: Delivery = {
    body: envelopeBody(envelope),
    properties: envelopeProperties(envelope),
    exchange: typeof info.exchange === 'string' ? info.exchange : '',
    routingKey: typeof info.routing_key === 'string' ? info.routing_key : '',
    queue,
    redelivered: info.redelivered === true,
    deliveryTag: envelope.properties.delivery_tag,
    ack: () => settler.ack(),
    reject: ({ requeue }) => settler.reject(requeue),
  }
  // Added after, not spread in: a conditional spread at the head of the literal makes V8 clone
  // through its slow path, on every delivery (bench/README.md#tricks).
  if ('defer' in settler) {
    delivery.deferVisibility = (until) => settler.defer(until)
    delivery.isLive = () => settler.isLive()
  }
  return delivery
}
