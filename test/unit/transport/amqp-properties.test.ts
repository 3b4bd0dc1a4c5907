// amqplib's decoded headers become the contract's plain values (converted in
// place, so nested tables and arrays must come out plain too).
import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { MessageProperties as AmqplibProperties } from 'amqplib'
import { fromAmqplibProperties } from '../../../src/transport/amqp/properties.js'

/** The properties that pass through unchanged. */
const PLAIN_FIELDS = {
  contentType: 'application/json',
  contentEncoding: 'utf-8',
  deliveryMode: 2,
  priority: 3,
  correlationId: 'c-1',
  replyTo: 'r-1',
}

it('[amqp properties] tagged values, buffers, bigints and nested tables come out as plain JSON-like values', () => {
  const props = {
    ...PLAIN_FIELDS,
    expiration: 60000,
    headers: {
      task: 'proj.add',
      retries: 0,
      ignore_result: false,
      eta: null,
      missing: undefined,
      stamp: { '!': 'timestamp', value: 1700000000 },
      ratio: { '!': 'decimal', value: { places: 2, digits: 314 } },
      origin: Buffer.from('gen1@host'),
      big: 2n ** 40n,
      timelimit: [null, { '!': 'timestamp', value: 5 }],
      nested: { inner: Buffer.from('x'), keep: 'y' },
    },
  } as unknown as AmqplibProperties
  assert.deepEqual(fromAmqplibProperties(props), {
    ...PLAIN_FIELDS,
    expiration: '60000',
    headers: {
      task: 'proj.add',
      retries: 0,
      ignore_result: false,
      eta: null,
      missing: null,
      stamp: 1700000000,
      ratio: 3.14,
      origin: 'gen1@host',
      big: 2 ** 40,
      timelimit: [null, 5],
      nested: { inner: 'x', keep: 'y' },
    },
  })
})

it('[amqp properties] no headers and missing fields give the contract defaults', () => {
  assert.deepEqual(fromAmqplibProperties({} as AmqplibProperties), {
    contentType: '',
    contentEncoding: '',
    headers: {},
    deliveryMode: 1,
    priority: 0,
  })
})
