// tricks/direct-publish.ts hands amqplib the fields its own publish would build, with
// the task's header table itself in place of amqplib's wrapper around it: the
// frames must be the same bytes, and the confirm callback queued first.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { ConfirmChannel } from 'amqplib'
import '../../../src/transport/amqp/amqplib.js'
import Args from 'amqplib/lib/api_args.js'
import defs from 'amqplib/lib/defs.js'
import { choosePublisher, plainPublisher, publishFields, type PublishFields } from '../../../src/transport/amqp/publish.js'
import { directPublisher } from '../../../src/transport/amqp/tricks/direct-publish.js'
import type { MessageProperties } from '../../../src/transport/transport.js'
import { encodeTaskV2 } from '../../../src/protocol/index.js'

const task = encodeTaskV2('proj.add', {
  args: [2, 300],
  kwargs: { big: 2 ** 40 },
  origin: 'gen1@host',
  replyTo: 'reply-q',
  expires: 60,
  timeLimit: 300,
})
const withExpiry: MessageProperties = {
  contentType: task.contentType,
  contentEncoding: task.contentEncoding,
  headers: task.headers as MessageProperties['headers'],
  deliveryMode: 2,
  priority: 5,
  correlationId: task.properties.correlationId,
  replyTo: task.properties.replyTo,
  expiration: task.properties.expiration,
}
const direct = directPublisher({ frames: true })
const { correlationId: _c, replyTo: _r, expiration: _e, ...bare } = { ...withExpiry, deliveryMode: 1 as const, priority: 0 }

/** amqplib's frames for a publish: the basic.publish method and the content header. */
function frames(fields: Record<string, unknown>): Buffer {
  return Buffer.concat([defs.encodeMethod(defs.BasicPublish, 1, fields), defs.encodeProperties(defs.BasicProperties, 1, 42, fields)])
}

for (const [name, props] of [
  ['a task with every property', withExpiry],
  ['a message without the optional ones', bare],
] as const) {
  it(`[amqp direct publish] ${name}: the same frames as amqplib's publish`, () => {
    const ours = publishFields('celery', 'celery.key', props)
    const theirs = Args.publish('celery', 'celery.key', { ...props })
    assert.equal(ours.headers, props.headers, 'the table itself, not a wrapper')
    assert.deepEqual(frames(ours as unknown as Record<string, unknown>), frames(theirs))
  })
}

it('[amqp direct publish] the confirm callback is queued before the message is written, on the channel itself', () => {
  const calls: string[] = []
  const cb = (): void => undefined
  const body = Buffer.from('[]')
  const fields = publishFields('', 'q', withExpiry)
  const channel = {
    pushConfirmCallback(given: unknown) {
      assert.equal(given, cb)
      calls.push('confirm')
    },
    sendMessage(f: PublishFields, p: PublishFields, content: Buffer) {
      assert.equal(f, fields)
      assert.equal(p, fields)
      assert.equal(content, body)
      calls.push('send')
      return true
    },
    publish() {
      calls.push('publish')
    },
  }
  direct.confirmed(channel as unknown as ConfirmChannel, fields, body, cb)
  direct.unconfirmed(channel as unknown as ConfirmChannel, fields, body)
  assert.deepEqual(calls, ['confirm', 'send', 'send'])
})

it("[amqp direct publish] without amqplib's internals, the public publish, with options that make the same frames", () => {
  const seen: unknown[][] = []
  const channel = { publish: (...args: unknown[]) => void seen.push(args) }
  const body = Buffer.from('[]')
  const cb = (): void => undefined
  const fields = publishFields('ex', 'rk', withExpiry)
  direct.confirmed(channel as unknown as ConfirmChannel, fields, body, cb)
  direct.unconfirmed(channel as unknown as ConfirmChannel, fields, body)
  assert.equal(seen.length, 2)
  for (const [exchange, routingKey, content, options] of seen) {
    assert.deepEqual([exchange, routingKey, content], ['ex', 'rk', body])
    assert.deepEqual(
      frames(Args.publish('ex', 'rk', options as Record<string, unknown>)),
      frames(fields as unknown as Record<string, unknown>),
    )
  }
  assert.equal(seen[0]![4], cb)
})

it("[amqp direct publish] an open channel's frames go on its own frame stream; a closing one, or a stream now another channel's, goes through sendMessage", () => {
  const body = Buffer.from('[]')
  const fields = publishFields('', 'q', withExpiry)
  const calls: string[] = []
  const stream = { write: (frames: Buffer) => calls.push(`stream ${frames[0]}`) > 0 }
  class FakeChannel {
    ch = 3
    connection: { channels: unknown[]; sentSinceLastCheck: boolean } = { channels: [], sentSinceLastCheck: false }
    pushConfirmCallback(): void {
      calls.push('confirm')
    }
    sendMessage(): boolean {
      calls.push('sendMessage')
      return true
    }
  }
  const open = new FakeChannel()
  open.connection.channels[3] = { channel: open, buffer: stream }
  direct.confirmed(open as unknown as ConfirmChannel, fields, body, () => undefined)
  assert.deepEqual(calls.splice(0), ['confirm', 'stream 1'])
  assert.equal(open.connection.sentSinceLastCheck, true)

  const closing = new FakeChannel()
  closing.connection.channels[3] = { channel: closing, buffer: stream }
  Object.assign(closing, { sendMessage: () => calls.push('closing: throws') })
  direct.confirmed(closing as unknown as ConfirmChannel, fields, body, () => undefined)
  assert.deepEqual(calls.splice(0), ['confirm', 'closing: throws'])

  const reused = new FakeChannel()
  reused.connection.channels[3] = { channel: new FakeChannel(), buffer: stream }
  direct.confirmed(reused as unknown as ConfirmChannel, fields, body, () => undefined)
  direct.unconfirmed(reused as unknown as ConfirmChannel, fields, body)
  assert.deepEqual(calls.splice(0), ['confirm', 'sendMessage', 'sendMessage'])
})

it("[amqp direct publish] TSQ_NO_DIRECT_PUBLISH or TSQ_NO_TRICKS: amqplib's own publish, even where its internals are there", () => {
  assert.notEqual(choosePublisher({}), plainPublisher)
  assert.equal(choosePublisher({ TSQ_NO_DIRECT_PUBLISH: '1' }), plainPublisher)
  assert.equal(choosePublisher({ TSQ_NO_TRICKS: '1' }), plainPublisher)
  assert.notEqual(choosePublisher({ TSQ_NO_TRICKS: '' }), plainPublisher, 'an empty value is no switch')
  const calls: string[] = []
  const channel = {
    pushConfirmCallback: () => calls.push('confirm'),
    sendMessage: () => calls.push('sendMessage') > 0,
    publish: (_e: string, _r: string, _b: Buffer, _o: unknown, cb?: unknown) => calls.push(cb ? 'publish+cb' : 'publish'),
  }
  const fields = publishFields('', 'q', withExpiry)
  plainPublisher.confirmed(channel as unknown as ConfirmChannel, fields, Buffer.from('[]'), () => undefined)
  plainPublisher.unconfirmed(channel as unknown as ConfirmChannel, fields, Buffer.from('[]'))
  assert.deepEqual(calls, ['publish+cb', 'publish'])
})

it("[amqp direct publish] TSQ_NO_PUBLISH_FRAMES: an open channel's message goes through sendMessage, not tsq's frames", () => {
  const calls: string[] = []
  const stream = { write: () => calls.push('stream') > 0 }
  const channel = {
    ch: 3,
    connection: { channels: [] as unknown[], sentSinceLastCheck: false },
    pushConfirmCallback: () => calls.push('confirm'),
    sendMessage: () => calls.push('sendMessage') > 0,
  }
  channel.connection.channels[3] = { channel, buffer: stream }
  const noFrames = directPublisher({ frames: false })
  noFrames.confirmed(channel as unknown as ConfirmChannel, publishFields('', 'q', withExpiry), Buffer.from('[]'), () => undefined)
  assert.deepEqual(calls, ['confirm', 'sendMessage'])
})
