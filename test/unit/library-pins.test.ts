// The libraries whose internals tsq patches or calls, pinned to the versions its
// tricks were written and measured against (docs/tricks.md): the installed
// version, the lockfile's, and the internals each trick touches. An `npm update`
// that moves one fails here, loudly, where at run time the trick would only turn
// itself off (NODE_DEBUG=tsq says so). To move a pin: re-read what the failing
// assertion names, re-measure (bench/README.md#tricks), then change the pin.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { PassThrough } from 'node:stream'
import { describe, it } from 'node:test'
import type { ChannelModel, ConfirmChannel } from 'amqplib'
import '../../src/transport/amqp/amqplib.js'
import Args from 'amqplib/lib/api_args.js'
import codec from 'amqplib/lib/codec.js'
import connectionModule from 'amqplib/lib/connection.js'
import defs from 'amqplib/lib/defs.js'
import { Command, Redis } from 'ioredis'
import { publishFields } from '../../src/transport/amqp/publish.js'
import { AMQPLIB_MEASURED, amqplibAsMeasured, amqplibShapeGap } from '../../src/transport/amqp/tricks/amqplib-pin.js'
import { batchSocketWrites } from '../../src/transport/amqp/tricks/batch-writes.js'
import { directPublisher } from '../../src/transport/amqp/tricks/direct-publish.js'
import { SINGLE_CHUNK_THRESHOLD } from '../../src/transport/amqp/tricks/publish-frames.js'
import { IOREDIS_MEASURED, ioredisAsMeasured, ioredisShapeGap } from '../../src/transport/redis/tricks/ioredis-pin.js'
import { WireListBatch } from '../../src/transport/redis/tricks/lpush-wire.js'
import { ioredisCommandPrototype, ioredisLateSocketErrors, oclifPlainSort } from '../../scripts/bundle-patches.mjs'

/** Measured with koffi's malloc_trim (src/process/idle-trim.ts). */
const KOFFI_MEASURED = '3.3.4'
/** Measured with the bundle's oclif patch (scripts/bundle-patches.mjs); the fast path reads as this oclif parses. */
const OCLIF_CORE_MEASURED = '4.14.0'

const require = createRequire(import.meta.url)
const ROOT = new URL('../../', import.meta.url)
const lock = JSON.parse(readFileSync(new URL('package-lock.json', ROOT), 'utf8')) as { packages: Record<string, { version: string }> }

/** A file of an installed package, as text (by its path: some packages' exports hide their files). */
const sourceOf = (path: string): string => readFileSync(new URL(`node_modules/${path}`, ROOT), 'utf8')

/** The installed version, read from the package's own directory (koffi's exports hide its package.json). */
function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, ROOT), 'utf8')) as { version: string }).version
}

function assertPinned(name: string, measured: string): void {
  const hint = `${name} moved: re-check the internals its tricks touch (docs/tricks.md), re-measure, then move the pin`
  assert.equal(installedVersion(name), measured, `installed ${hint}`)
  assert.equal(lock.packages[`node_modules/${name}`]?.version, measured, `package-lock.json's ${hint}`)
}

describe('amqplib, as the AMQP tricks and patches were written for it', () => {
  it(`is ${AMQPLIB_MEASURED}, installed and locked, and has every internal the tricks call`, () => {
    assertPinned('amqplib', AMQPLIB_MEASURED)
    assert.equal(amqplibShapeGap(), undefined)
    assert.equal(amqplibAsMeasured(), true)
  })

  it('another version turns the tricks off (the plain path runs)', () => {
    assert.equal(amqplibAsMeasured('0.10.10'), false)
  })

  it('direct publish: Args.publish builds the same fields, and ConfirmChannel.publish queues the callback before sendMessage', () => {
    const ours = publishFields('ex', 'rk', {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: { a: 1 },
      deliveryMode: 2,
      priority: 0,
    })
    assert.deepEqual(Object.keys(Args.publish('ex', 'rk', {})).sort(), Object.keys(ours).sort())
    const model = sourceOf('amqplib/lib/channel_model.js')
    assert.match(
      model,
      /class ConfirmChannel extends Channel \{\s*publish\(exchange, routingKey, content, options, cb\) \{\s*this\.pushConfirmCallback\(cb\);\s*return super\.publish/,
    )
    assert.match(
      model,
      /const fieldsAndProps = Args\.publish\(exchange, routingKey, options\);\s*return this\.sendMessage\(fieldsAndProps, fieldsAndProps, content\);/,
    )
    // A closing channel gets a sendMessage of its own, which frameStream() takes as "not open".
    assert.match(sourceOf('amqplib/lib/channel.js'), /ch\.sendImmediately = ch\.sendOrEnqueue = ch\.sendMessage =/)
  })

  it("publish frames: a real Connection's channel stream takes tsq's frames, the bytes amqplib's sendMessage writes", () => {
    assert.match(sourceOf('amqplib/lib/connection.js'), new RegExp(`var SINGLE_CHUNK_THRESHOLD = ${SINGLE_CHUNK_THRESHOLD};`))
    const connection = new connectionModule.Connection(new PassThrough()) as unknown as {
      freshChannel(channel: object): number
      channels: Array<{ channel: object; buffer: PassThrough }>
      sentSinceLastCheck: boolean
      sendMessage(...args: unknown[]): void
    }
    const channel = { onBufferDrain: () => undefined } as Record<string, unknown>
    const ch = connection.freshChannel(channel)
    const sent: string[] = []
    Object.assign(channel, { ch, connection, pushConfirmCallback: () => sent.push('confirm') })
    // On the prototype, as amqplib's open channel has it (an own sendMessage means closing).
    Object.setPrototypeOf(channel, { sendMessage: () => sent.push('sendMessage') > 0 })
    const fields = publishFields('', 'celery', {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: { task: 'proj.add', n: 300 },
      deliveryMode: 2,
      priority: 0,
    })
    const body = Buffer.from('[[2, 2], {}, {}]')
    directPublisher({ frames: true }).confirmed(channel as unknown as ConfirmChannel, fields, body, () => undefined)
    assert.deepEqual(sent, ['confirm'], 'written on the frame stream, not through sendMessage')
    assert.equal(connection.sentSinceLastCheck, true)
    const ours = connection.channels[ch]!.buffer.read() as Buffer

    const written: Buffer[] = []
    const fake = { channels: { [ch]: { buffer: { write: (b: Buffer) => written.push(b) } } }, sentSinceLastCheck: false }
    connectionModule.Connection.prototype.sendMessage.call(fake, ch, defs.BasicPublish, fields, defs.BasicProperties, fields, body)
    assert.deepEqual(ours, Buffer.concat(written))
  })

  it("batch writes: a Connection's muxer has the socket as `out` and a `_readIncoming` pass to wrap", () => {
    const socket = new PassThrough()
    const connection = new connectionModule.Connection(socket) as unknown as { muxer: { out: unknown; _readIncoming: unknown } }
    assert.equal(connection.muxer.out, socket)
    const pass = connection.muxer._readIncoming
    assert.equal(typeof pass, 'function')
    assert.equal(batchSocketWrites({ connection } as unknown as ChannelModel), true)
    assert.notEqual(connection.muxer._readIncoming, pass)
  })

  it('nowait declare: the channel sends any method with sendImmediately, and Args builds the declare and bind fields', () => {
    assert.equal(typeof Args.assertExchange, 'function')
    assert.equal(typeof Args.assertQueue, 'function')
    assert.equal(typeof Args.bindQueue, 'function')
    // A nowait field the encoder writes: the bit is set in the frame.
    const fields = { ...Args.bindQueue('q', 'ex', 'rk', {}), nowait: true }
    const on = defs.encodeMethod(defs.QueueBind, 1, fields)
    const off = defs.encodeMethod(defs.QueueBind, 1, { ...fields, nowait: false })
    assert.notDeepEqual(on, off)
  })

  it("the field-table codec (install-codec.ts): amqplib's defs copy codec's table functions when they load", () => {
    assert.equal(typeof codec.encodeTable, 'function')
    assert.equal(typeof codec.decodeFields, 'function')
    assert.match(sourceOf('amqplib/lib/defs.js'), /encodeTable = codec\.encodeTable, decodeFields = codec\.decodeFields/)
  })

  it('heartbeat off (heartbeat.ts): Connection#open and #sendMethod to wrap, tune-ok to rewrite, heartbeat and stream to read', () => {
    const proto = connectionModule.Connection.prototype as unknown as Record<string, unknown>
    assert.equal(typeof proto.open, 'function')
    assert.equal(typeof proto.sendMethod, 'function')
    assert.equal(typeof defs.ConnectionTuneOk, 'number')
    const source = sourceOf('amqplib/lib/connection.js')
    assert.match(source, /self\.heartbeat = tunedOptions\.heartbeat;/)
    assert.match(source, /var stream = this\.stream = wrapStream\(underlying\);/)
    assert.match(source, /onSocketError \(err\)/)
  })

  it("the broker's close text (handshake-close.ts): Connection#step reads the handshake's frames alone, and open reports a close after open without it", () => {
    const proto = connectionModule.Connection.prototype as unknown as Record<string, unknown>
    assert.equal(typeof proto.step, 'function')
    assert.equal(typeof defs.ConnectionClose, 'number')
    const source = sourceOf('amqplib/lib/connection.js')
    assert.equal(source.match(/\.step\(/g)?.length, 1, 'step() is called from the handshake only')
    assert.match(source, /function wait \(k\) \{\s*self\.step\(function \(err, frame\) \{/)
    assert.match(source, /expect\(defs\.ConnectionOpenOk, onOpenOk\);/)
    assert.match(source, /fmt\("Expected %s; got %s",\s*methodName\(Method\), inspect\(frame, false\)\)/)
  })
})

describe('ioredis, as the Redis tricks and the bundle patches were written for it', () => {
  it(`is ${IOREDIS_MEASURED}, installed and locked, and has every internal the tricks call`, () => {
    assertPinned('ioredis', IOREDIS_MEASURED)
    assert.equal(ioredisShapeGap(), undefined)
    assert.equal(ioredisAsMeasured(), true)
    assert.equal(ioredisAsMeasured('5.12.0'), false)
  })

  it("lpush wire: sendCommand writes what the command's toWritable returns, and settles it on the reply", () => {
    assert.match(sourceOf('ioredis/built/Redis.js'), /this\.stream\.write\(command\.toWritable\(this\.stream\)\)/)
    const batch = new WireListBatch('q')
    batch.add('m1', { resolve: () => undefined, reject: () => undefined })
    const command = batch.command()
    assert.ok(command instanceof Command)
    assert.equal(typeof command.resolve, 'function')
    assert.ok(command.promise instanceof Promise)
    assert.equal(typeof Redis.prototype.sendCommand, 'function')
  })

  it("the bundle's patches find their lines (scripts/bundle-patches.mjs)", () => {
    assert.ok(sourceOf('ioredis/built/utils/Commander.js').includes(ioredisCommandPrototype.find), ioredisCommandPrototype.name)
    assert.ok(sourceOf('ioredis/built/Redis.js').includes(ioredisLateSocketErrors.find), ioredisLateSocketErrors.name)
  })

  it("liveness (redis/liveness.ts) reads the connection's stream and socketTimeoutTimer", () => {
    const source = sourceOf('ioredis/built/Redis.js')
    assert.match(source, /_this\.stream = stream;/)
    assert.match(source, /this\.socketTimeoutTimer = setTimeout/)
  })
})

describe('@oclif/core, as the bundle patch and the fast path were written for it', () => {
  it(`is ${OCLIF_CORE_MEASURED}, installed and locked, and sorts its commands on the line the bundle patches`, () => {
    assertPinned('@oclif/core', OCLIF_CORE_MEASURED)
    assert.ok(sourceOf('@oclif/core/lib/config/plugin.js').includes(oclifPlainSort.find), oclifPlainSort.name)
  })
})

describe('koffi, as malloc_trim calls it', () => {
  it(
    `is ${KOFFI_MEASURED}, installed and locked, and loads libc's malloc_trim`,
    { skip: process.platform !== 'linux' && "malloc_trim is glibc's" },
    () => {
      assertPinned('koffi', KOFFI_MEASURED)
      const koffi = require('koffi') as { load(path: string): { func(signature: string): (pad: number) => number } }
      const trim = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)')
      assert.equal(typeof trim(0), 'number')
    },
  )
})
