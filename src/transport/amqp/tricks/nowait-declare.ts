// A queue with its exchanges and bindings declared in one round trip: every
// method but the last goes out with nowait, and the last one's reply comes
// after the broker has done the rest (a channel runs its methods in order). A
// refusal of any closes the channel, which rejects that last call with the
// broker's reason. amqplib sends one RPC per round trip and has no nowait
// option, so the nowait methods go through its channel's `sendImmediately`
// with the fields its own calls build (lib/api_args.js). Switch: TSQ_NO_NOWAIT_DECLARE.
import type { Channel } from 'amqplib'
// Before amqplib's defs load: they copy the codec's table functions (install-codec.ts).
import '../install-codec.js'
import Args from 'amqplib/lib/api_args.js'
import defs from 'amqplib/lib/defs.js'
import type { TopologySpec } from '../../transport.js'
import { queueOptions } from '../topology.js'

/** Declares `t` as declareTopology does, in one round trip. */
export async function declareTopologyNowait(channel: Channel, t: TopologySpec): Promise<void> {
  const send = (channel as unknown as { sendImmediately(method: number, fields: Record<string, unknown>): void }).sendImmediately.bind(
    channel,
  )
  for (const ex of t.exchanges) {
    // The default exchange and amq.* exist already and may not be declared by clients.
    if (ex.name === '' || ex.name.startsWith('amq.')) continue
    send(defs.ExchangeDeclare, {
      ...Args.assertExchange(ex.name, ex.type, { durable: ex.durable, autoDelete: ex.autoDelete }),
      nowait: true,
    })
  }
  // Every queue is bound to the default exchange by name; RabbitMQ refuses explicit binds to it.
  const bindings = t.bindings.filter((b) => b.exchange !== '')
  const last = bindings.pop()
  if (!last) {
    await channel.assertQueue(t.queue.name, queueOptions(t.queue))
    return
  }
  send(defs.QueueDeclare, { ...Args.assertQueue(t.queue.name, queueOptions(t.queue)), nowait: true })
  for (const b of bindings) send(defs.QueueBind, { ...Args.bindQueue(t.queue.name, b.exchange, b.routingKey, {}), nowait: true })
  await channel.bindQueue(t.queue.name, last.exchange, last.routingKey)
}
