import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Channel, Message } from 'amqplib'
import { AckBatcher } from '../../../src/transport/amqp/ack-batcher.js'

function fakeChannel() {
  const sent: string[] = []
  const channel = {
    ack: (m: Message, multiple: boolean) => sent.push(`ack ${m.fields.deliveryTag}${multiple ? ' multiple' : ''}`),
    reject: (m: Message, requeue: boolean) => sent.push(`reject ${m.fields.deliveryTag}${requeue ? ' requeue' : ''}`),
  } as unknown as Channel
  return { channel, sent }
}
const msg = (deliveryTag: number) => ({ fields: { deliveryTag } }) as Message
const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('AckBatcher', () => {
  it('sends the acks of one turn as one multiple ack when they are the front run', async () => {
    const { channel, sent } = fakeChannel()
    const b = new AckBatcher(channel)
    for (const t of [1, 2, 3, 4]) b.delivered(t)
    b.ack(2)
    b.ack(1)
    b.ack(3)
    assert.deepEqual(sent, [], 'nothing goes out before the turn ends')
    await turn()
    assert.deepEqual(sent, ['ack 3 multiple'])
  })

  it('does not hold back acks behind a delivery still running, and never covers it', async () => {
    const { channel, sent } = fakeChannel()
    const b = new AckBatcher(channel)
    for (const t of [1, 2, 3]) b.delivered(t)
    b.ack(2)
    b.ack(3)
    await turn()
    assert.deepEqual(sent, ['ack 2', 'ack 3'])
    b.ack(1)
    await turn()
    assert.deepEqual(sent, ['ack 2', 'ack 3', 'ack 1 multiple'])
  })

  it('rejects at once and leaves the rejected delivery out of later multiple acks', async () => {
    const { channel, sent } = fakeChannel()
    const b = new AckBatcher(channel)
    for (const t of [1, 2, 3]) b.delivered(t)
    b.reject(msg(1), true)
    b.ack(2)
    b.ack(3)
    assert.deepEqual(sent, ['reject 1 requeue'])
    await turn()
    assert.deepEqual(sent, ['reject 1 requeue', 'ack 3 multiple'])
  })

  it('flush() sends pending acks before a close; after close nothing is sent', async () => {
    const { channel, sent } = fakeChannel()
    const b = new AckBatcher(channel)
    b.delivered(7)
    b.delivered(8)
    b.ack(7)
    b.flush()
    assert.deepEqual(sent, ['ack 7 multiple'])
    b.close()
    b.ack(8)
    b.reject(msg(8), false)
    await turn()
    assert.deepEqual(sent, ['ack 7 multiple'])
  })
})
