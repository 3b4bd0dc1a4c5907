// Crash safety of the file broker with real processes: a consumer killed with
// SIGKILL loses nothing, and concurrent publishers in separate processes lose
// and duplicate nothing.
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { describe, it, type TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { waitFor } from '../../helpers/brokers.js'
import { FileLayout } from '../../../src/transport/file/layout.js'
import { QueueStore } from '../../../src/transport/file/queues.js'
import { ExchangeTable } from '../../../src/transport/file/routing.js'
import { AUTO_DELETE_GRACE_MS, Sweeper } from '../../../src/transport/file/sweeper.js'
import { brokerDir, collect, openTransport, queueSpec, message, sleep } from './fixtures/file-kit.js'

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url))
const REPO = fileURLToPath(new URL('../../../', import.meta.url))

interface Child {
  proc: ChildProcess
  lines: string[]
  exited: Promise<number | null>
}

function runChild(t: TestContext, script: string, args: string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, script), ...args], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines: string[] = []
  createInterface({ input: proc.stdout! }).on('line', (line) => lines.push(line))
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  })
  return { proc, lines, exited }
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  )

/** A child process that declared `queue` auto-delete and consumed it, killed with SIGKILL. */
async function killedAutoDeleteConsumer(t: TestContext, dir: string, queue: string): Promise<void> {
  const child = runChild(t, 'file-consumer-child.ts', [dir, queue, '1', 'autoDelete'])
  await waitFor(() => child.lines.includes('ready'), { timeoutMs: 20_000, what: 'the child consumer' })
  child.proc.kill('SIGKILL')
  await child.exited
}

/** Another node's housekeeping, run when the test says. */
function sweeperOf(dir: string): Sweeper {
  const layout = new FileLayout(dir)
  return new Sweeper(layout, new QueueStore(layout, new ExchangeTable(layout)), 'another-node')
}

describe('file transport crash safety', () => {
  it("a SIGKILLed consumer's unacked message comes back to another consumer, redelivered", async (t) => {
    const dir = await brokerDir(t)
    const tr = await openTransport(t, dir)
    await tr.declareQueue(queueSpec('crashy'))
    await tr.publish('', 'crashy', message('precious'))
    await tr.publish('', 'crashy', message('second'))
    const child = runChild(t, 'file-consumer-child.ts', [dir, 'crashy', '1'])
    await waitFor(() => child.lines.includes('got precious false'), { timeoutMs: 20_000, what: 'the child to take the message' })
    child.proc.kill('SIGKILL')
    await child.exited
    const c = await collect(tr, 'crashy')
    await waitFor(() => c.received.length === 2, { timeoutMs: 15_000, what: 'both messages after the crash' })
    assert.deepEqual(
      c.received.map((d) => `${d.body}:${d.redelivered}`),
      ['precious:true', 'second:false'],
    )
  })

  it("a consumer that is already running picks up a crashed owner's claims on its sweep", async (t) => {
    const dir = await brokerDir(t)
    const tr = await openTransport(t, dir)
    await tr.declareQueue(queueSpec('sweep'))
    const child = runChild(t, 'file-consumer-child.ts', [dir, 'sweep', '5'])
    await waitFor(() => child.lines.includes('ready'), { timeoutMs: 20_000, what: 'the child consumer' })
    await tr.publish('', 'sweep', message('orphan'))
    await waitFor(() => child.lines.includes('got orphan false'), { timeoutMs: 20_000, what: 'the child to take the message' })
    // Started before the crash, so only the periodic sweep can bring the message back.
    const watcher = await collect(tr, 'sweep')
    child.proc.kill('SIGKILL')
    await child.exited
    await waitFor(() => watcher.received.length === 1, { timeoutMs: 15_000, what: 'the orphan back via the periodic sweep' })
    assert.equal(watcher.received[0]!.redelivered, true)
  })

  it("[autoDelete] a crashed process's auto-delete queue is removed by a sweeper", async (t) => {
    const dir = await brokerDir(t)
    const tr = await openTransport(t, dir)
    await killedAutoDeleteConsumer(t, dir, 'w9@host.celery.pidbox')
    await tr.declareQueue(queueSpec('sweeper-trigger'))
    await collect(tr, 'sweeper-trigger')
    await waitFor(async () => !(await exists(join(dir, 'queues', 'w9@host.celery.pidbox'))), {
      timeoutMs: 15_000,
      what: 'the dead auto-delete queue to go',
    })
  })

  it('[autoDelete] a queue declared again after its consumer was SIGKILLed is not swept before it is consumed', async (t) => {
    // `multi kill` then `multi start` under the same names: the new worker
    // declares its pidbox, and another node's sweep may run before it consumes.
    const dir = await brokerDir(t)
    const pidbox = 'w7@host.celery.pidbox'
    await killedAutoDeleteConsumer(t, dir, pidbox)
    const restarted = await openTransport(t, dir)
    await restarted.declareQueue(queueSpec(pidbox, {}, true))
    const otherNode = sweeperOf(dir)
    const report = await otherNode.sweepAll()
    assert.deepEqual(report.deletedQueues, [])
    const c = await collect(restarted, pidbox)
    await restarted.publish('', pidbox, message('after restart'))
    await waitFor(() => c.received.length === 1, { timeoutMs: 15_000, what: "the restarted consumer's message" })
  })

  it('[autoDelete] a sweep in the gap between a SIGKILL and a declare again does not delete the queue being declared', async (t) => {
    // The sweep that runs first sees only the dead consumer; the queue was used
    // a moment ago (the dead worker's last heartbeat, or the new declare), so it waits.
    const dir = await brokerDir(t)
    const pidbox = 'w8@host.celery.pidbox'
    await killedAutoDeleteConsumer(t, dir, pidbox)
    const otherNode = sweeperOf(dir)
    assert.deepEqual((await otherNode.sweepAll()).deletedQueues, [])
    const restarted = await openTransport(t, dir)
    await restarted.declareQueue(queueSpec(pidbox, {}, true))
    await collect(restarted, pidbox)
    await sleep(AUTO_DELETE_GRACE_MS + 500)
    assert.deepEqual((await otherNode.sweepAll()).deletedQueues, [], 'a queue with a live consumer again stays')
  })

  it('2 publisher processes x 500 messages: one consumer gets all 1000 exactly once', async (t) => {
    const dir = await brokerDir(t)
    const tr = await openTransport(t, dir)
    await tr.declareQueue(queueSpec('many'))
    const c = await collect(tr, 'many', { prefetch: 10 })
    const pubs = ['p1', 'p2'].map((tag) => runChild(t, 'file-publisher-child.ts', [dir, 'many', '500', tag]))
    const codes = await Promise.all(pubs.map((p) => p.exited))
    assert.deepEqual(codes, [0, 0])
    await waitFor(() => c.received.length >= 1000, { timeoutMs: 30_000, what: '1000 deliveries' })
    const bodies = c.bodies()
    assert.equal(bodies.length, 1000)
    assert.equal(new Set(bodies).size, 1000)
    // Each publisher's own messages arrive in the order it sent them.
    for (const tag of ['p1', 'p2']) {
      const mine = bodies.filter((b) => b.startsWith(`${tag}-`)).map((b) => Number(b.split('-')[1]))
      assert.deepEqual(
        mine,
        [...mine].sort((x, y) => x - y),
      )
    }
  })
})
