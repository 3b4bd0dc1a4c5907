// A task's pool slot is given back once its outcome is stored: the ack's
// round trip (a MULTI on Redis) happens outside it, and shutdown still waits
// for every ack to go out.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { createApp } from '../../../src/app/app.js'
import { Logger } from '../../../src/process/logger.js'
import { taskDeliveryFields } from '../../helpers/deliveries.js'
import type { Delivery } from '../../../src/transport/index.js'
import type { EventDispatcher } from '../../../src/worker/events.js'
import { LimitedSet } from '../../../src/worker/control/limited-set.js'
import { SoloPool } from '../../../src/worker/pools/solo-pool.js'
import type { Job, Outcome } from '../../../src/app/execution/jobs.js'
import type { Placement, Pool } from '../../../src/worker/pools/pool.js'
import { TaskRunner } from '../../../src/worker/task-path/task-runner.js'

class RecordingLogger extends Logger {
  readonly errors: string[] = []
  override log(level: Parameters<Logger['log']>[0], message: string): void {
    if (level === 'ERROR') this.errors.push(message)
  }
}

interface Gate {
  promise: Promise<void>
  open(): void
  fail(error: Error): void
}

function gate(): Gate {
  let open!: () => void
  let fail!: (error: Error) => void
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve
    fail = reject
  })
  return { promise, open, fail }
}

/** A delivery whose ack settles when the test says so. */
function delivery(taskName: string, args: unknown[], ack: Gate): Delivery & { acks: number; rejects: number } {
  const d = {
    ...taskDeliveryFields(taskName, args),
    acks: 0,
    rejects: 0,
    ack: () => {
      d.acks += 1
      return ack.promise
    },
    reject: () => {
      d.rejects += 1
      return Promise.resolve()
    },
  }
  return d
}

function runnerWith(concurrency: number, log = new RecordingLogger('WARNING'), acksLate = true) {
  const app = createApp({ name: 'proj' })
  const ran: unknown[] = []
  const taskGate = gate()
  app.task('proj.record', (x: unknown) => {
    ran.push(x)
    return x
  })
  app.task('proj.wait', async () => {
    await taskGate.promise
    return 'done'
  })
  const runner = new TaskRunner({
    app,
    transport: undefined as never,
    pool: new SoloPool(app, concurrency),
    backend: null,
    events: { taskEvents: false, sendTask: () => undefined } as unknown as EventDispatcher,
    revoked: new LimitedSet(),
    log,
    hostname: 'w@h',
    acksLate,
    timeLimit: null,
    softTimeLimit: null,
    onScheduledChange: () => undefined,
  })
  return { runner, ran, log, taskGate }
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** Starts waiting for the runner to go idle; `done()` tells whether it has yet. */
function watchIdle(runner: TaskRunner): { done(): boolean; idled: Promise<void> } {
  let idle = false
  const idled = runner.idle().then(() => {
    idle = true
  })
  return { done: () => idle, idled }
}

it('[task-runner] the next task starts while the previous one is still being acked', async () => {
  const { runner, ran } = runnerWith(1)
  const firstAck = gate()
  const secondAck = gate()
  const first = delivery('proj.record', [1], firstAck)
  await runner.onDelivery(first)
  await runner.onDelivery(delivery('proj.record', [2], secondAck))
  await turn()
  assert.deepEqual(ran, [1, 2], 'the only slot was free again before the first ack completed')
  assert.equal(first.acks, 1)
  assert.equal(runner.active.size, 0)

  const idle = watchIdle(runner)
  await turn()
  assert.equal(idle.done(), false, 'idle waits for the acks that are still on their way')
  firstAck.open()
  await turn()
  assert.equal(idle.done(), false)
  secondAck.open()
  await idle.idled
})

it('[task-runner] an ack that fails is logged once and not retried as a reject', async () => {
  const { runner, log } = runnerWith(2)
  const ack = gate()
  const d = delivery('proj.record', ['x'], ack)
  await runner.onDelivery(d)
  await turn()
  ack.fail(new Error('connection lost'))
  await runner.idle()
  assert.equal(d.acks, 1)
  assert.equal(d.rejects, 0)
  assert.equal(log.errors.length, 1)
  assert.match(log.errors[0]!, /Could not ack proj\.record\[[0-9a-f-]+\], the broker will deliver it again: connection lost/)
})

it('[task-runner] with early ack the message is acked when the task starts, once, and idle waits for it', async () => {
  const { runner, taskGate } = runnerWith(1, new RecordingLogger('WARNING'), false)
  const ack = gate()
  const d = delivery('proj.wait', [], ack)
  await runner.onDelivery(d)
  await turn()
  assert.equal(d.acks, 1, 'acked before the task finished')
  assert.equal(runner.active.size, 1)
  taskGate.open()
  await turn()
  assert.equal(runner.active.size, 0)
  const idle = watchIdle(runner)
  await turn()
  assert.equal(idle.done(), false, 'the early ack is still on its way')
  ack.open()
  await idle.idled
  assert.equal(d.acks, 1, 'not acked a second time when the task finished')
})

it('[task-runner] a task that returns without a promise is received, run and acked within the delivery call, with no promise made', () => {
  const { runner, ran } = runnerWith(2)
  const d = delivery('proj.record', ['now'], gate())
  const returned = runner.onDelivery(d)
  assert.equal(returned, undefined, 'nothing to wait for: no promise')
  assert.deepEqual(ran, ['now'])
  assert.equal(d.acks, 1, 'acked before onDelivery returned')
  assert.equal(runner.active.size, 0, 'the slot is free again')
  assert.equal(runner.processed, 1)
})

it('[task-runner] an async task keeps its slot until its promise settles, then is acked', async () => {
  const { runner, taskGate } = runnerWith(1)
  const d = delivery('proj.wait', [], gate())
  runner.onDelivery(d)
  assert.equal(runner.active.size, 1)
  assert.equal(d.acks, 0)
  taskGate.open()
  await turn()
  assert.equal(d.acks, 1)
  assert.equal(runner.active.size, 0)
})

/** A pool that keeps its slots fed, driven by the test: it takes jobs while `taking`, and starts or gives back each when told. */
function stagingPool() {
  const placed: { id: string; placement: Placement; settle: (o: Outcome) => void }[] = []
  const pool = {
    kind: 'prefork' as const,
    size: 1,
    taking: true,
    placed,
    start: () => Promise.resolve(),
    run: (): Outcome => ({ status: 'success', value: null, runtime: 0 }),
    canPlace: () => pool.taking,
    place(job: Job, _limit: number | null, _sink: unknown, placement: Placement): Promise<Outcome> {
      return new Promise<Outcome>((settle) => placed.push({ id: job.id, placement, settle }))
    },
    unstage: () => Promise.resolve(),
    afterStored: () => undefined,
    terminate: () => false,
    abort: () => undefined,
    grow: () => Promise.resolve(),
    shrink: () => Promise.resolve(),
    slots: () => [],
    close: () => Promise.resolve(),
  }
  return pool
}

it('[task-runner] inspect reserved lists the jobs staged in a pool slot, then those waiting, until each starts', async () => {
  const app = createApp({ name: 'proj' })
  app.task('proj.record', (x: unknown) => x)
  const pool = stagingPool()
  const runner = new TaskRunner({
    app,
    transport: undefined as never,
    pool: pool as unknown as Pool,
    backend: null,
    events: { taskEvents: false, sendTask: () => undefined } as unknown as EventDispatcher,
    revoked: new LimitedSet(),
    log: new RecordingLogger('WARNING'),
    hostname: 'w@h',
    acksLate: true,
    timeLimit: null,
    softTimeLimit: null,
    onScheduledChange: () => undefined,
  })
  const ids = (rs: { id: string }[]) => rs.map((r) => r.id)
  const d = [1, 2, 3, 4].map((n) => delivery('proj.record', [n], gate()))
  const id = (i: number) => String((d[i]!.properties.headers as Record<string, unknown>).id)
  for (const x of d.slice(0, 3)) await runner.onDelivery(x)
  await turn()
  assert.deepEqual(
    pool.placed.map((p) => p.id),
    [id(0), id(1), id(2)],
    'all three handed to the pool',
  )
  assert.deepEqual(ids(runner.reserved), [id(0), id(1), id(2)], 'staged, not started: reserved')
  pool.placed[0]!.placement.started()
  assert.deepEqual(ids(runner.reserved), [id(1), id(2)])
  assert.deepEqual([...runner.active.keys()], [id(0)])
  // The pool takes no more: the fourth waits in the runner, listed after the staged ones.
  pool.taking = false
  await runner.onDelivery(d[3]!)
  await turn()
  assert.deepEqual(ids(runner.reserved), [id(1), id(2), id(3)])
  // Given back unstarted: first in line again, still reserved.
  pool.placed[2]!.placement.returned()
  await turn()
  assert.deepEqual(ids(runner.reserved), [id(1), id(2), id(3)])
  pool.placed[1]!.placement.started()
  assert.deepEqual(ids(runner.reserved), [id(2), id(3)])
  assert.deepEqual(new Set(runner.active.keys()), new Set([id(0), id(1)]))
})
