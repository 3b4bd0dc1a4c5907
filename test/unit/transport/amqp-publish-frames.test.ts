// tricks/publish-frames.ts writes a publish's three frames itself: they must be the
// bytes amqplib's Connection#sendMessage writes for the same message, and
// anything it cannot write exactly so must be left to amqplib.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import '../../../src/transport/amqp/amqplib.js'
import connection from 'amqplib/lib/connection.js'
import defs from 'amqplib/lib/defs.js'
import { publishFields, type PublishFields } from '../../../src/transport/amqp/publish.js'
import { encodePublishFrames } from '../../../src/transport/amqp/tricks/publish-frames.js'
import type { MessageProperties } from '../../../src/transport/transport.js'
import { encodeTaskV2 } from '../../../src/protocol/index.js'

/** What amqplib's own sendMessage writes on the channel's frame stream for the message. */
function amqplibFrames(channel: number, fields: PublishFields, body: Buffer): Buffer {
  const written: Buffer[] = []
  const fake = { channels: { [channel]: { buffer: { write: (b: Buffer) => written.push(b) } } }, sentSinceLastCheck: false }
  connection.Connection.prototype.sendMessage.call(fake, channel, defs.BasicPublish, fields, defs.BasicProperties, fields, body)
  assert.equal(fake.sentSinceLastCheck, true)
  return Buffer.concat(written)
}

const task = encodeTaskV2('proj.add', {
  args: [2, 300],
  kwargs: { who: 'zoë' },
  origin: 'gen1@host',
  replyTo: 'c0ffee-reply',
  expires: 60,
  timeLimit: 300,
  group: 'g-1',
  groupIndex: 2,
})
const taskProps: MessageProperties = {
  contentType: task.contentType,
  contentEncoding: task.contentEncoding,
  headers: task.headers as MessageProperties['headers'],
  deliveryMode: 2,
  priority: 9,
  correlationId: task.properties.correlationId,
  replyTo: task.properties.replyTo,
  expiration: task.properties.expiration,
}
const bare: MessageProperties = { contentType: 'application/json', contentEncoding: 'utf-8', headers: {}, deliveryMode: 1, priority: 0 }

const cases: Array<[string, number, PublishFields, Buffer]> = [
  ['a task with every property', 1, publishFields('', 'celery', taskProps), Buffer.from(task.body)],
  ['a message with none of the optional properties', 7, publishFields('celeryev', 'task.sent', bare), Buffer.from('{"a": 1}')],
  ['an empty body (no body frame)', 2, publishFields('', 'q', bare), Buffer.alloc(0)],
  [
    'non-ASCII names, short and long',
    65535,
    publishFields('échange', `clé-${'é'.repeat(40)}`, { ...taskProps, correlationId: 'ïd', replyTo: `rép-${'ö'.repeat(60)}` }),
    Buffer.from('[]'),
  ],
  ['strings of 255 bytes', 3, publishFields('x'.repeat(255), 'y'.repeat(255), { ...bare, replyTo: 'z'.repeat(255) }), Buffer.from('[]')],
  ['no headers at all', 4, { ...publishFields('', 'q', bare), headers: undefined }, Buffer.from('[]')],
]

for (const [name, channel, fields, body] of cases) {
  it(`[amqp publish frames] ${name}: the bytes amqplib writes`, () => {
    const ours = encodePublishFrames(channel, fields, body)
    assert.ok(ours, 'written here')
    assert.deepEqual(ours, amqplibFrames(channel, fields, body))
  })
}

it('[amqp publish frames] frames up to one byte under the single-chunk threshold are written here, from there on by amqplib', () => {
  const fields = publishFields('', 'q', bare)
  const small = encodePublishFrames(1, fields, Buffer.alloc(0))!
  const fill = 2048 - small.length - 8 // the body frame's own 8 bytes
  assert.deepEqual(encodePublishFrames(1, fields, Buffer.alloc(fill - 1, 'a')), amqplibFrames(1, fields, Buffer.alloc(fill - 1, 'a')))
  assert.equal(encodePublishFrames(1, fields, Buffer.alloc(fill, 'a')), undefined)
})

it('[amqp publish frames] what amqplib would refuse or read otherwise is left to amqplib', () => {
  const fields = publishFields('', 'q', bare)
  const body = Buffer.from('[]')
  for (const odd of [
    { replyTo: 'r'.repeat(256) },
    { correlationId: 'é'.repeat(128) }, // 128 characters, 256 bytes
    { exchange: 'e'.repeat(300) },
    { deliveryMode: 256 },
    { priority: -1 },
    { priority: 1.5 },
    { headers: null },
    { correlationId: null },
    { contentType: 42 },
    { headers: { big: 'x'.repeat(70_000) } },
  ]) {
    assert.equal(
      encodePublishFrames(1, { ...fields, ...odd } as unknown as PublishFields, body),
      undefined,
      JSON.stringify(odd).slice(0, 60),
    )
  }
  assert.equal(encodePublishFrames(1, fields, '[]' as unknown as Buffer), undefined)
})
