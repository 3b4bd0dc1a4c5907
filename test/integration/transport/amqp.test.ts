import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { AmqpTransport } from '../../../src/transport/amqp/amqp-transport.js'
import { amqpConnectSettings } from '../../../src/transport/amqp/connection/connect-options.js'
import { BrokerConnectionError, BrokerRequestError, TransportClosedError } from '../../../src/transport/errors.js'
import type { Delivery, Transport } from '../../../src/transport/transport.js'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../../helpers/brokers.js'
import { Collector, message } from './conformance/context.js'
import { describeTransportConformance } from './conformance/index.js'
import { killAmqpConnections } from './conformance/kill-connections.js'

const skip = await brokerSkipReason('amqp')
const run = promisify(execFile)

describeTransportConformance('amqp', async () => new AmqpTransport(AMQP_URL), {
  kind: 'amqp',
  killConnections: () => killAmqpConnections(),
  crashUrl: AMQP_URL,
  skip,
})

describe('amqp URL → connection settings (kombu rules)', () => {
  const vhostOf = (url: string) => amqpConnectSettings(url).connect.vhost
  it('`//` and an empty path both mean vhost `/`', () => {
    assert.equal(vhostOf('amqp://guest:guest@127.0.0.1:5672//'), '/')
    assert.equal(vhostOf('amqp://guest:guest@127.0.0.1:5672/'), '/')
    assert.equal(vhostOf('amqp://guest:guest@127.0.0.1:5672'), '/')
  })
  it('a named or escaped vhost is decoded', () => {
    assert.equal(vhostOf('amqp://h/prod'), 'prod')
    assert.equal(vhostOf('amqp://h/%2Fprod'), '/prod')
  })
  it('pyamqp:// is amqp://, amqps:// defaults to port 5671, the password is masked', () => {
    const py = amqpConnectSettings('pyamqp://u:secret@127.0.0.1//')
    assert.equal(py.connect.protocol, 'amqp')
    assert.equal(py.connect.port, 5672)
    assert.equal(py.displayUrl, 'pyamqp://u:**@127.0.0.1//')
    assert.equal(amqpConnectSettings('amqps://h//').connect.port, 5671)
  })
})

describe('amqp specifics', { skip }, () => {
  const open: Transport[] = []
  const queues: string[] = []
  async function transport(url = AMQP_URL): Promise<AmqpTransport> {
    const t = new AmqpTransport(url)
    open.push(t)
    await t.connect()
    return t
  }
  function qname(): string {
    const name = uniqueName('tsq-amqp-spec')
    queues.push(name)
    return name
  }
  after(async () => {
    for (const t of open) await t.close().catch(() => undefined)
    const sweeper = new AmqpTransport(AMQP_URL)
    await sweeper.connect()
    for (const q of queues) await sweeper.deleteQueue(q).catch(() => undefined)
    await sweeper.close()
  })

  it('connect() to a closed port fails with BrokerConnectionError and one line', { timeout: 20_000 }, async () => {
    const t = new AmqpTransport('amqp://guest:guest@127.0.0.1:1//')
    await assert.rejects(t.connect(), (err: unknown) => {
      assert.ok(err instanceof BrokerConnectionError)
      assert.equal(err.code, 'BROKER_UNREACHABLE')
      assert.ok(!err.message.includes('\n'), err.message)
      assert.match(err.message, /amqp:\/\/guest:\*\*@127\.0\.0\.1:1\/\/.*refused/)
      return true
    })
  })

  it('connect() with wrong credentials fails with BrokerConnectionError naming the cause', { timeout: 20_000 }, async () => {
    const t = new AmqpTransport('amqp://guest:not-the-password@127.0.0.1:5672//')
    await assert.rejects(t.connect(), (err: unknown) => {
      assert.ok(err instanceof BrokerConnectionError)
      assert.ok(!err.message.includes('not-the-password'))
      assert.match(
        err.message,
        /: ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN\..* \(check the user name and password\)$/,
      )
      return true
    })
  })

  it(
    "connect() to a vhost that does not exist names RabbitMQ's reply (NOT_ALLOWED), as Celery prints it",
    { timeout: 20_000 },
    async () => {
      const url = new URL(AMQP_URL)
      url.pathname = `/tsq-no-such-vhost-${process.pid}`
      const t = new AmqpTransport(url.href)
      await assert.rejects(t.connect(), (err: unknown) => {
        assert.ok(err instanceof BrokerConnectionError)
        assert.match(err.message, new RegExp(`: NOT_ALLOWED - vhost tsq-no-such-vhost-${process.pid} not found$`))
        return true
      })
    },
  )

  it('406 on redeclare surfaces as BrokerRequestError and the transport keeps working', { timeout: 20_000 }, async () => {
    const t = await transport()
    const q = qname()
    await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: false })
    await assert.rejects(t.declareQueue({ name: q, durable: true, exclusive: false, autoDelete: false }), (err: unknown) => {
      assert.ok(err instanceof BrokerRequestError)
      assert.equal(err.code, 'PRECONDITION_FAILED')
      assert.match(err.message, /406.*inequivalent arg 'durable'/)
      return true
    })
    await t.publish('', q, message('still alive'))
    assert.equal((await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: false })).messageCount, 1)
  })

  it('publish to a missing exchange is a 404 BrokerRequestError; the next publish works', { timeout: 20_000 }, async () => {
    const t = await transport()
    const q = qname()
    await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: false })
    await assert.rejects(t.publish(uniqueName('tsq-no-such-exchange'), 'x', message('lost')), (err: unknown) => {
      assert.ok(err instanceof BrokerRequestError)
      assert.equal(err.code, 'NOT_FOUND')
      return true
    })
    await t.publish('', q, message('ok'))
    assert.equal(await t.purge(q), 1)
  })

  it(
    'a publish the broker nacks (a full queue with x-overflow reject-publish) rejects; it never resolves',
    { timeout: 60_000 },
    async () => {
      const t = await transport()
      const q = qname()
      await t.declareQueue({
        name: q,
        durable: false,
        exclusive: false,
        autoDelete: false,
        arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' },
      })
      await t.publish('', q, message('fills it'))
      // Each attempt is nacked (the publish is tried again as for any failed confirm), so the promise rejects.
      await assert.rejects(t.publish('', q, message('nacked')), /nack/i)
      assert.equal(await t.purge(q), 1)
      await t.publish('', q, message('room again'))
      assert.equal(await t.purge(q), 1)
    },
  )

  it('consuming from a missing queue is a 404 BrokerRequestError', { timeout: 20_000 }, async () => {
    const t = await transport()
    await assert.rejects(
      t.consume(uniqueName('tsq-no-such-queue'), () => undefined),
      (err: unknown) => {
        assert.ok(err instanceof BrokerRequestError)
        assert.equal(err.code, 'NOT_FOUND')
        return true
      },
    )
  })

  it("an exclusive queue held by another connection is RESOURCE_LOCKED (beat's mutex)", { timeout: 20_000 }, async () => {
    const a = await transport()
    const b = await transport()
    const q = qname()
    await a.declareQueue({ name: q, durable: false, exclusive: true, autoDelete: false })
    await assert.rejects(b.declareQueue({ name: q, durable: false, exclusive: true, autoDelete: false }), (err: unknown) => {
      assert.ok(err instanceof BrokerRequestError)
      assert.equal(err.code, 'RESOURCE_LOCKED')
      return true
    })
  })

  it('x-max-priority: higher priority is delivered first', { timeout: 20_000 }, async () => {
    const t = await transport()
    assert.equal(t.capabilities.priority, 'higher-first')
    const q = qname()
    await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: false, arguments: { 'x-max-priority': 10 } })
    await t.publish('', q, message('low', { priority: 1 }))
    await t.publish('', q, message('high', { priority: 9 }))
    const got = new Collector()
    await t.consume(q, got.handler, { noAck: true })
    await got.waitForCount(2)
    assert.deepEqual(got.bodies(), ['high', 'low'])
  })

  it('spec §10: a pidbox queue declared by Python kombu is redeclared without 406', { timeout: 30_000 }, async (t) => {
    const q = qname()
    const py = [
      'import sys, kombu',
      'c = kombu.Connection(sys.argv[1]); ch = c.channel()',
      'kombu.Queue(sys.argv[2], durable=False, auto_delete=True, expires=10.0, message_ttl=300.0, channel=ch).declare()',
      'c.release()',
    ].join('\n')
    try {
      await run('/usr/bin/python3', ['-c', py, AMQP_URL, q], { timeout: 20_000 })
    } catch (err) {
      t.skip(`python3 kombu unavailable: ${String(err).split('\n')[0]}`)
      return
    }
    const tsq = await transport()
    await tsq.declareQueue({
      name: q,
      durable: false,
      exclusive: false,
      autoDelete: true,
      arguments: { 'x-expires': 10_000, 'x-message-ttl': 300_000 },
    })
  })

  it('acking a delivery from a dead connection does not throw; the broker redelivers it', { timeout: 60_000 }, async () => {
    const t = await transport()
    const q = qname()
    await t.declareQueue({ name: q, durable: false, exclusive: false, autoDelete: false })
    await t.publish('', q, message('held'))
    const got: Delivery[] = []
    await t.consume(q, (d) => void got.push(d), { prefetch: 1 })
    await waitFor(() => got.length === 1, { what: 'first delivery' })
    let restored = false
    t.on('connection:restored', () => (restored = true))
    await killAmqpConnections(`${t.connectionName}`)
    await waitFor(() => restored, { timeoutMs: 30_000, what: 'reconnect' })
    await got[0]!.ack()
    await waitFor(() => got.length === 2, { timeoutMs: 30_000, what: 'the redelivery' })
    assert.equal(got[1]!.redelivered, true)
    await got[1]!.ack()
  })

  it('after close, calls fail with TransportClosedError', { timeout: 20_000 }, async () => {
    const t = await transport()
    await t.close()
    await t.close()
    await assert.rejects(t.publish('', 'x', message('late')), TransportClosedError)
  })
})
