// Celery's task_* settings in the app's conf act as every task's defaults in
// the worker: task_time_limit kills a task that overruns it,
// task_reject_on_worker_lost=False fails a task whose pool process died
// (WorkerLostError) instead of running it again, and task_default_rate_limit
// shows in `inspect registered` beside a task's own limit; task_routes sends a
// chain's next step to the queue its route names.
import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { rmSync } from 'node:fs'
import { createApp, signature, type App } from '../../src/index.js'
import { ROOT, embeddedBrokerEnv, runTsq, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import { strayErrorsAreSurvived } from '../helpers/stray-errors.js'

describe("the app's task_* settings in a prefork worker (file://)", () => {
  const home = tempTsqHome()
  // Not the default embedded broker (TSQ_HOME/broker): what a pool process sends must follow -b.
  const brokerUrl = `file://${join(home, 'flag-broker')}`
  const env = embeddedBrokerEnv(home)
  let worker: SpawnedWorker | undefined
  let app: App

  before(async () => {
    worker = await startWorker(
      [
        '-A',
        join(ROOT, 'test/fixtures/tasks/conf-tasks.js'),
        '-b',
        brokerUrl,
        '--result-backend',
        brokerUrl,
        '-P',
        'prefork',
        '-c',
        '1',
        '-l',
        'INFO',
      ],
      {
        env,
        nodename: `conf-${process.pid}@${hostname()}`,
      },
    )
    app = createApp({ name: 'proj', broker: brokerUrl, resultBackend: brokerUrl })
  })

  after(async () => {
    await app?.close()
    await worker?.stop()
    rmSync(home, { recursive: true, force: true })
  })

  const withLog = (msg: string) => `${msg}\n--- worker ---\n${worker?.output().slice(-4000) ?? ''}`

  it('task_time_limit: a task past 1 s is killed and fails with TimeLimitExceeded', async () => {
    const r = await app.sendTask('proj.sleepy', [10])
    await assert.rejects(r.get({ timeout: 20 }), (error: Error) => error.name === 'TimeLimitExceeded', withLog(r.id))
  })

  it('task_reject_on_worker_lost=False: a task whose process died fails with WorkerLostError and does not run again', async () => {
    const r = await app.sendTask('proj.crash', [])
    await assert.rejects(
      r.get({ timeout: 20 }),
      (error: Error) => error.name === 'WorkerLostError' && /signal 9 \(SIGKILL\)/.test(error.message),
      withLog(r.id),
    )
    // The pool process was replaced, and the message was not requeued into another crash.
    const after = await app.sendTask('proj.sleepy', [0])
    assert.equal(await after.get({ timeout: 20 }), 0, withLog(after.id))
    assert.equal(
      worker!
        .output()
        .split('\n')
        .filter((l) => l.includes(`proj.crash[${r.id}] received`)).length,
      1,
      withLog(''),
    )
  })

  it("a task that sends a task from its pool process sends it to the worker's -b broker and --result-backend", async () => {
    const parent = await app.sendTask('proj.spawnquick', [])
    const childId = (await parent.get({ timeout: 20 }).catch((e: Error) => withLog(e.message))) as string
    assert.equal(
      await app
        .asyncResult(childId)
        .get({ timeout: 20 })
        .catch((e: Error) => withLog(e.message)),
      'ok',
    )
  })

  it('a result with a Map, a Set, a BigInt, a Date and a toJSON() comes out of a pool process as from the solo pool; one with a function fails with EncodeError once', async () => {
    const shapes = await app.sendTask('proj.shapes', [])
    assert.deepEqual(await shapes.get({ timeout: 20 }).catch((e: Error) => withLog(e.message)), {
      map: { a: 1 },
      set: [1, 2],
      big: 18446744073709552000,
      when: '1970-01-01T00:00:00Z',
      price: '19.99 EUR',
    })
    const bad = await app.sendTask('proj.unencodable', [])
    await assert.rejects(
      bad.get({ timeout: 20 }),
      (error: Error) => error.name === 'EncodeError' && error.message === "TypeError('Object of type function is not JSON serializable')",
      withLog(bad.id),
    )
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(
      worker!
        .output()
        .split('\n')
        .filter((l) => l.includes(`proj.unencodable[${bad.id}] received`)).length,
      1,
      withLog('received again'),
    )
  })

  it("a stray rejected promise or a throw from a task's timer is logged in the pool process, which goes on", async () => {
    await strayErrorsAreSurvived(app, () => worker!, 'celery')
  })

  it("what a task prints is logged by its pool process, as Celery's worker_redirect_stdouts logs it", async () => {
    await printsAreLogged(app, () => worker!, 'celery', 'ForkPoolWorker-1')
  })

  it('broker_transport_options: inspect stats reports them under broker.transport_options, as Celery does', async () => {
    const out = await runTsq(['inspect', 'stats', '-b', brokerUrl, '-d', worker!.nodename, '--json'], { env })
    assert.equal(out.code, 0, out.stderr)
    const stats = (JSON.parse(out.stdout) as Record<string, { broker: { transport_options: unknown } }>)[worker!.nodename]!
    assert.deepEqual(stats.broker.transport_options, { visibility_timeout: 7200 })
  })

  it('task_default_rate_limit: inspect registered shows it for tasks without their own', async () => {
    const out = await runTsq(['inspect', 'registered', '-b', brokerUrl, '-d', worker!.nodename, '--json'], { env })
    assert.equal(out.code, 0, out.stderr)
    const tasks = (JSON.parse(out.stdout) as Record<string, string[]>)[worker!.nodename]!
    assert.ok(tasks.includes('proj.sleepy [rate_limit=50/s]'), tasks.join('\n'))
    assert.ok(tasks.includes('proj.quick [rate_limit=1/s]'), tasks.join('\n'))
  })
})

describe("task_routes: the client and the worker both route by the app's conf (file://)", () => {
  const home = tempTsqHome()
  const brokerUrl = `file://${join(home, 'broker')}`
  const routes = { 'proj.add': 'math', 'proj.m*': { queue: 'math' } }
  let worker: SpawnedWorker | undefined
  let app: App

  before(async () => {
    // The worker consumes only `math`: a step routed anywhere else would never run.
    worker = await startWorker(
      [
        '-A',
        join(ROOT, 'test/fixtures/tasks/interop-tasks.js'),
        '-b',
        brokerUrl,
        '--result-backend',
        brokerUrl,
        '-P',
        'solo',
        '-Q',
        'math',
        '-l',
        'INFO',
      ],
      {
        env: { ...embeddedBrokerEnv(home), TSQ_WI_TASK_ROUTES: JSON.stringify(routes), TSQ_WI_SIGNALS: '1' },
        nodename: `routes-${process.pid}@${hostname()}`,
      },
    )
    app = createApp({ name: 'proj', broker: brokerUrl, resultBackend: brokerUrl, conf: { task_routes: routes } })
  })

  after(async () => {
    await app?.close()
    await worker?.stop()
    rmSync(home, { recursive: true, force: true })
  })

  // First, while the worker is new: without the wait a task would run mid-init.
  it("the solo pool sends worker_process_init in the worker's process, as Celery's does, and waits for its async receiver", async () => {
    const r = await app.sendTask('proj.initdone', [], {}, { queue: 'math' })
    assert.equal(await r.get({ timeout: 20 }), true, worker?.output().slice(-3000))
    assert.match(worker!.output(), /signal worker_process_init 0/)
  })

  it("sendTask of a routed task goes to its queue; a chain's next step, sent by the worker, follows the route too", async () => {
    const sum = await app.sendTask('proj.add', [2, 3])
    assert.equal(await sum.get({ timeout: 20 }), 5)
    // chain() hands back the last step's result, as Celery's chain does.
    const chained = await app.chain(signature('proj.add', [1, 2]), signature('proj.mul', [10]))
    assert.equal(await chained.get({ timeout: 20 }), 30, worker?.output().slice(-3000))
  })

  it("a stray rejected promise or a throw from a task's timer is logged, and the solo worker goes on", async () => {
    await strayErrorsAreSurvived(app, () => worker!, 'math')
  })

  it("what a task prints is logged by the worker, as Celery's worker_redirect_stdouts logs it", async () => {
    await printsAreLogged(app, () => worker!, 'math', 'MainProcess')
  })
})

/** console.log at WARNING and console.error at ERROR, on Celery's log line, from the process that ran the task. */
async function printsAreLogged(app: App, worker: () => SpawnedWorker, queue: string, processName: string): Promise<void> {
  const text = `hello-${queue}`
  const r = await app.sendTask('proj.say', [text], {}, { queue })
  assert.equal(await r.get({ timeout: 20 }), text)
  await new Promise((resolve) => setTimeout(resolve, 100))
  const out = worker().output()
  assert.match(out, new RegExp(`^\\[[\\d-]+ [\\d:,]+: WARNING/${processName}\\] said ${text}$`, 'm'), out.slice(-3000))
  assert.match(out, new RegExp(`^\\[[\\d-]+ [\\d:,]+: ERROR/${processName}\\] complained ${text}$`, 'm'), out.slice(-3000))
}
