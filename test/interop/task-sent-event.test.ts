// task_send_sent_event: a Python Celery 5.2.6 client and a tsq app,
// both with the setting on, each send one task; the task-sent events they
// publish to celeryev (routing key task.sent) are read side by side: the same
// fields in the same order, the same values where the send was the same.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createApp, type App } from '../../src/app/app.js'
import { declareEventExchange } from '../../src/client/event-receiver.js'
import { createTransport, type Delivery, type Transport } from '../../src/transport/index.js'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { PY_DIR, PYTHON, run } from './helpers/python-worker.js'

const skip = await brokerSkipReason('amqp')

describe('[task_send_sent_event] the task-sent event, tsq beside a Python client', { skip }, () => {
  const TASK_QUEUE = uniqueName('tsq-sent-q')
  const EVENTS = uniqueName('tsq-sent-ev')
  let listener: Transport
  let app: App
  const events: Delivery[] = []

  before(async () => {
    listener = await createTransport(AMQP_URL)
    await listener.connect()
    await declareEventExchange(listener)
    await listener.declareQueue({ name: EVENTS, durable: false, exclusive: false, autoDelete: true })
    await listener.bindQueue(EVENTS, 'celeryev', 'task.sent')
    await listener.consume(EVENTS, (d) => void events.push(d), { noAck: true })
    app = createApp({ name: 'sent', broker: AMQP_URL, conf: { task_send_sent_event: true } })
  })
  after(async () => {
    await app?.close()
    await listener?.deleteQueue(EVENTS).catch(() => undefined)
    await listener?.close()
    await deleteCeleryQueues('amqp', AMQP_URL, [TASK_QUEUE]).catch(() => undefined)
  })

  it('same fields, same order, same values for the same send', async () => {
    const code = `from celery import Celery
app = Celery('sent', broker='${AMQP_URL}')
app.conf.task_send_sent_event = True
app.send_task('tasks.sent', (2, 'x'), {'k': 1.5}, queue='${TASK_QUEUE}', task_id='py-sent-${process.pid}')`
    const res = await run(PYTHON, ['-c', code], { cwd: PY_DIR, timeoutMs: 60_000 })
    assert.equal(res.code, 0, res.stderr)
    await waitFor(() => events.length === 1, { timeoutMs: 20_000, what: "the Python client's task-sent" })
    await app.sendTask('tasks.sent', [2, 'x'], { k: 1.5 }, { queue: TASK_QUEUE, id: `tsq-sent-${process.pid}` })
    await waitFor(() => events.length === 2, { timeoutMs: 20_000, what: "tsq's task-sent" })
    const [py, ts] = events.map((d) => ({
      headers: d.properties.headers,
      props: d.properties,
      event: JSON.parse(d.body.toString()) as Record<string, unknown>,
    }))
    assert.deepEqual(
      Object.keys(ts!.event),
      Object.keys(py!.event),
      `python: ${JSON.stringify(py!.event)}\ntsq: ${JSON.stringify(ts!.event)}`,
    )
    const same = ['type', 'name', 'args', 'kwargs', 'retries', 'eta', 'expires', 'parent_id', 'queue', 'exchange', 'routing_key']
    for (const k of same) assert.deepEqual(ts!.event[k], py!.event[k], k)
    assert.equal(py!.event.uuid, `py-sent-${process.pid}`)
    assert.equal(ts!.event.uuid, `tsq-sent-${process.pid}`)
    assert.equal(ts!.event.root_id, ts!.event.uuid)
    assert.match(String(ts!.event.hostname), /^gen\d+@/)
    for (const k of ['utcoffset', 'pid', 'clock', 'timestamp']) assert.equal(typeof ts!.event[k], typeof py!.event[k], k)
    assert.deepEqual(Object.keys(ts!.headers), Object.keys(py!.headers))
    assert.equal(ts!.props.contentType, py!.props.contentType)
    assert.equal(ts!.props.deliveryMode, py!.props.deliveryMode)
  })
})
