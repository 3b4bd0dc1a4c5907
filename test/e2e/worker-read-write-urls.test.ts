// broker_read_url / broker_write_url and task_inherit_parent_priority,
// on two embedded brokers (two file:// folders) so no server is needed: the
// worker consumes from the read URL only, and what it sends (a task sent from
// inside a task, a link) goes to the write URL, with the parent's priority.
import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createApp, signature, type App } from '../../src/app/index.js'
import { createTransport, type Delivery, type Transport } from '../../src/transport/index.js'
import { ROOT, embeddedBrokerEnv, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import { waitFor } from '../helpers/brokers.js'

const MODULE = join(ROOT, 'test/fixtures/tasks/cfg-conf-env.js')

describe('[broker_read_url, broker_write_url, task_inherit_parent_priority] a worker consumes from one broker and publishes to the other', () => {
  const home = tempTsqHome()
  const READ = `file://${join(home, 'read-broker')}`
  const WRITE = `file://${join(home, 'write-broker')}`
  let worker: SpawnedWorker
  let sender: App
  let written: Transport
  let read: Transport

  before(async () => {
    // broker_url is the write side here; broker_read_url sends the worker to the other folder.
    const env = embeddedBrokerEnv(home, {
      TSQ_BROKER_URL: WRITE,
      CFG_CONF: JSON.stringify({ broker_read_url: READ, task_inherit_parent_priority: true }),
      NO_COLOR: '1',
    })
    worker = await startWorker(['-A', MODULE, '-P', 'solo', '-l', 'INFO', '--without-mingle', '--without-gossip'], {
      env,
      nodename: `rw-${process.pid}@${hostname()}`,
    })
    sender = createApp({ name: 'rw-client', broker: READ })
    written = await createTransport(WRITE)
    await written.connect()
    read = await createTransport(READ)
    await read.connect()
  })
  after(async () => {
    await worker?.stop()
    await sender?.close()
    await written?.close()
    await read?.close()
  })

  it("a task sent from inside a task lands on the write broker with the parent's priority and id; a link likewise", async () => {
    const parent = await sender.sendTask('cfgenv.spawn', [], {}, { priority: 6 })
    const linked = await sender.sendTask(
      'cfgenv.noop',
      [],
      {},
      { priority: 4, link: signature('cfgenv.noop', [], {}, { immutable: true }) },
    )
    const got: Delivery[] = []
    await written.declareQueue({ name: 'celery', durable: true, exclusive: false, autoDelete: false })
    const consumer = await written.consume('celery', (d) => void got.push(d), { noAck: true })
    await waitFor(() => got.length >= 2, { timeoutMs: 30_000, what: 'two messages on the write broker' })
    await consumer.cancel()
    const child = got.find((d) => d.properties.headers.parent_id === parent.id)
    assert.ok(child, `no child of ${parent.id} among ${got.map((d) => JSON.stringify(d.properties.headers)).join(' ')}`)
    assert.equal(child.properties.priority, 6)
    assert.equal(child.properties.headers.root_id, parent.id)
    const callback = got.find((d) => d.properties.headers.parent_id === linked.id)
    assert.ok(callback, 'the link was sent to the write broker')
    assert.equal(callback.properties.priority, 4)
    // Nothing came back to the read broker, and the worker names where it publishes.
    assert.equal((await read.checkQueue!('celery'))?.messageCount, 0)
    assert.match(worker.output(), /Publishing to file:\/\/.*write-broker/)
  })
})
