// Canvas on the embedded broker, no server at all: a worker on file:// runs a
// group, a chord (counted in the file result store) and a chain whose last
// step is a chord, sent from JavaScript; a task's own PROGRESS states reach
// the JavaScript client; the task signals a module connects run in the
// worker-thread slots.
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createApp, GroupResult, signature, type App } from '../../src/index.js'
import { ROOT, embeddedBrokerEnv, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import { strayErrorsAreSurvived } from '../helpers/stray-errors.js'

describe('canvas on the embedded broker (file://)', () => {
  const home = tempTsqHome()
  const brokerUrl = `file://${join(home, 'broker')}`
  let worker: SpawnedWorker | undefined
  let app: App

  before(async () => {
    worker = await startWorker(
      [
        '-A',
        join(ROOT, 'test/fixtures/tasks/interop-tasks.js'),
        '-b',
        brokerUrl,
        '--result-backend',
        brokerUrl,
        '-P',
        'threads',
        '-c',
        '2',
        '-l',
        'INFO',
      ],
      {
        env: { ...embeddedBrokerEnv(home), TSQ_WI_SIGNALS: '1' },
        nodename: `canvas-${process.pid}@${hostname()}`,
      },
    )
    app = createApp({ name: 'proj', broker: brokerUrl, resultBackend: brokerUrl })
  })

  after(async () => {
    await app?.close()
    await worker?.stop()
    rmSync(home, { recursive: true, force: true })
  })

  const add = (...args: number[]) => signature('proj.add', args)
  const withLog = (msg: string) => `${msg}\n--- worker ---\n${worker?.output().slice(-4000) ?? ''}`

  // First, while the slots are new: without the wait a task would reach a slot mid-init.
  it('an async worker_process_init receiver ends before its slot takes a task', async () => {
    for (let i = 0; i < 4; i++) {
      const r = await app.sendTask('proj.initdone', [])
      assert.equal(await r.get({ timeout: 20 }), true, withLog(r.id))
    }
  })

  it('a group gives every result in order', async () => {
    const g = await app.group(add(1, 1), add(2, 2), add(3, 3))
    assert.deepEqual(await g.get({ timeout: 20 }), [2, 4, 6], withLog(g.id))
  })

  it("task.map, task.starmap and task.chunks run as Celery's built-in celery.map and celery.starmap tasks", async () => {
    // Handles for sending: the client names the worker's tasks.
    const tsum = app.remote<[xs: number[]], number>('proj.tsum')
    const add = app.remote<[x: number, y: number], number>('proj.add')
    const mapped = await app.chain(
      tsum.map([
        [1, 2],
        [3, 4, 5],
      ]),
    )
    assert.deepEqual(await mapped.get({ timeout: 20 }), [3, 12], withLog(mapped.id))
    const starred = await app.chain(
      add.starmap([
        [1, 1],
        [2, 3],
      ]),
    )
    assert.deepEqual(await starred.get({ timeout: 20 }), [2, 5], withLog(starred.id))
    const chunked = await app.group(
      ...add.chunks(
        [
          [0, 0],
          [1, 1],
          [2, 2],
          [3, 3],
          [4, 4],
        ],
        2,
      ),
    )
    assert.deepEqual(await chunked.get({ timeout: 20 }), [[0, 2], [4, 6], [8]], withLog(chunked.id))
    assert.throws(() => add.chunks([[1, 1]], 0), /n must be a whole number of at least 1/)
  })

  it('a chord runs its body with the header results, counted in the file store', async () => {
    const r = await app.chord([add(1, 1), add(2, 2), add(3, 3), add(4, 4)], signature('proj.tsum'))
    assert.equal(await r.get({ timeout: 20 }).catch((e: Error) => withLog(e.message)), 20)
  })

  it('a chain whose last step is a chord: the worker starts the chord with the previous result', async () => {
    const header = {
      task: 'celery.group',
      args: [],
      kwargs: { tasks: [add(1), add(2)] },
      options: {},
      subtask_type: 'group',
      immutable: false,
    }
    const bodyId = `canvas-body-${process.pid}`
    const chordStep = {
      task: 'celery.chord',
      args: [],
      kwargs: { kwargs: {}, header, body: signature('proj.tsum', [], {}, { task_id: bodyId }) },
      options: {},
      subtask_type: 'chord',
      immutable: false,
    }
    await app.chain(add(1, 2), chordStep as unknown as ReturnType<typeof signature>)
    // add(1, 2) = 3, then the header add(3, 1) and add(3, 2), then tsum([4, 5]).
    assert.equal(
      await app
        .asyncResult(bodyId)
        .get({ timeout: 20 })
        .catch((e: Error) => withLog(e.message)),
      9,
    )
  })

  it("a chain ending in a group hands back the group's GroupResult, its ids frozen by the client", async () => {
    const groupStep = {
      task: 'celery.group',
      args: [],
      kwargs: {
        tasks: [
          add(10),
          add(20),
          { task: 'celery.group', args: [], kwargs: { tasks: [add(30)] }, options: {}, subtask_type: 'group', immutable: false },
        ],
      },
      options: {},
      subtask_type: 'group',
      immutable: false,
    }
    const r = await app.chain(add(1, 2), groupStep as unknown as ReturnType<typeof signature>)
    assert.ok(r instanceof GroupResult, `a ${r.constructor.name}`)
    // add(1, 2) = 3, then each member with 3 prepended; the nested group's member joins the outer group.
    assert.deepEqual(await r.get({ timeout: 20 }).catch((e: Error) => withLog(e.message)), [13, 23, 33])
  })

  it('a result a worker thread cannot hand over fails the task with EncodeError, as in the solo pool', async () => {
    const bad = await app.sendTask('proj.unencodable', [])
    await assert.rejects(
      bad.get({ timeout: 20 }),
      (error: Error) => error.name === 'EncodeError' && /function is not JSON serializable/.test(error.message),
      withLog(bad.id),
    )
  })

  it("a stray rejected promise or a throw from a task's timer is logged in the worker thread, which goes on", async () => {
    await strayErrorsAreSurvived(app, () => worker!, 'celery')
  })

  it("task signals: receivers the module connects run around each task in the slot, in Celery's order, the end ones after the result is stored", async () => {
    const ok = await app.sendTask('proj.add', [20, 22])
    assert.equal(await ok.get({ timeout: 20 }), 42)
    const failed = await app.sendTask('proj.fail', ['no'])
    await assert.rejects(failed.get({ timeout: 20 }), /no/)
    const deadline = Date.now() + 5000
    const linesOf = (id: string) =>
      (worker?.output() ?? '').split('\n').filter((l) => l.includes(`[${id}]`) && /signal task_(prerun|success|failure|postrun) /.test(l))
    while (Date.now() < deadline && linesOf(failed.id).length < 3) await new Promise((resolve) => setTimeout(resolve, 50))
    assert.deepEqual(
      linesOf(ok.id).map((l) => l.slice(l.indexOf('signal '))),
      [
        `signal task_prerun proj.add[${ok.id}] [20,22]`,
        `signal task_success proj.add[${ok.id}] 42`,
        `signal task_postrun proj.add[${ok.id}] SUCCESS`,
      ],
      withLog(''),
    )
    assert.deepEqual(
      linesOf(failed.id).map((l) => l.slice(l.indexOf('signal '))),
      [
        `signal task_prerun proj.fail[${failed.id}] ["no"]`,
        `signal task_failure proj.fail[${failed.id}] TypeError`,
        `signal task_postrun proj.fail[${failed.id}] FAILURE`,
      ],
      withLog(''),
    )
    // The slot held task_postrun until the worker had stored the result.
    const storedAtPostrun = (id: string) =>
      (worker?.output() ?? '')
        .split('\n')
        .find((l) => l.includes(`stored at postrun `) && l.includes(`[${id}]`))
        ?.replace(/.*\] /, '')
    while (Date.now() < deadline && !storedAtPostrun(failed.id)) await new Promise((resolve) => setTimeout(resolve, 50))
    assert.equal(storedAtPostrun(ok.id), 'SUCCESS', withLog(''))
    assert.equal(storedAtPostrun(failed.id), 'FAILURE', withLog(''))
  })

  it('worker signals: the main process sends worker_ready, task_received and task_unknown; each slot worker_process_init', async () => {
    const unknown = await app.sendTask('proj.nope', [])
    await assert.rejects(unknown.get({ timeout: 20 }), /NotRegistered|proj\.nope/)
    const out = worker?.output() ?? ''
    assert.match(out, new RegExp(`signal worker_ready ${worker!.nodename.replace('.', '\\.')}`), withLog(''))
    assert.deepEqual(
      out.match(/signal worker_process_init \d/g)?.sort(),
      ['signal worker_process_init 1', 'signal worker_process_init 2'],
      withLog(''),
    )
    assert.ok(out.includes(`signal task_unknown proj.nope[${unknown.id}] NotRegistered`), withLog(''))
    assert.ok(/signal task_received proj\.add\[/.test(out), withLog(''))
  })

  it('start-up signals: celeryd_init, worker_init, celeryd_after_setup (a queue it adds is consumed), then worker_ready; heartbeat_sent with each heartbeat', async () => {
    const own = `own-${worker!.nodename.split('@')[0]}`
    const r = await app.sendTask('proj.add', [40, 2], {}, { queue: own })
    assert.equal(await r.get({ timeout: 20 }).catch((e: Error) => withLog(e.message)), 42)
    const out = worker?.output() ?? ''
    const at = (line: string) => out.indexOf(`signal ${line} ${worker!.nodename}`)
    assert.ok(out.includes(`signal celeryd_init ${worker!.nodename} threads -c 2`), withLog(''))
    assert.ok(
      at('celeryd_init') < at('worker_init') &&
        at('worker_init') < at('celeryd_after_setup') &&
        at('celeryd_after_setup') < at('worker_ready'),
      withLog(''),
    )
    assert.match(out, new RegExp(`queues\\][\\s\\S]*${own}`), 'the banner lists the added queue')
    assert.ok(at('heartbeat_sent') > at('worker_init'), withLog(''))
  })

  it('before_task_publish in the worker: a chain step the worker sends is announced with its queue and arguments', async () => {
    const r = await app.chain(signature('proj.add', [2, 3]), signature('proj.mul', [7]))
    assert.equal(await r.get({ timeout: 20 }), 35)
    assert.match(worker?.output() ?? '', /signal before_task_publish proj\.mul celery \[5,7\]/, withLog(''))
  })

  it("a header the client's before_task_publish adds reaches the task as currentTask().headers", async () => {
    const off = app.on('before_task_publish', ({ headers }) => {
      headers.traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    })
    try {
      const r = await app.sendTask('proj.headers', [])
      assert.deepEqual(await r.get({ timeout: 20 }), { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })
    } finally {
      off()
    }
    const plain = await app.sendTask('proj.headers', [])
    assert.equal(await plain.get({ timeout: 20 }), null)
  })

  it('AsyncResult: successful(), failed(), traceback, dateDone and forget(); revoke(), ping() and inspect() through app.control', async () => {
    const ok = await app.sendTask('proj.add', [1, 1])
    assert.equal(await ok.get({ timeout: 20 }), 2)
    assert.equal(await ok.successful(), true)
    assert.equal(await ok.failed(), false)
    const done = await ok.dateDone
    assert.ok(done && Math.abs(done.getTime() - Date.now()) < 60_000, String(done))
    await ok.forget()
    assert.equal(await ok.state, 'PENDING')
    assert.equal(await ok.dateDone, null)

    const bad = await app.sendTask('proj.fail', ['broken'])
    await assert.rejects(bad.get({ timeout: 20 }))
    assert.equal(await bad.failed(), true)
    assert.match((await bad.traceback) ?? '', /TypeError: broken/)
    const returned = await bad.get({ timeout: 5, propagate: false })
    assert.ok(returned instanceof Error && returned.name === 'TypeError' && returned.message === 'broken', String(returned))

    // Held for its ETA, then revoked before it is due: the worker stores REVOKED instead of running it.
    const later = await app.sendTask('proj.add', [5, 5], {}, { countdown: 1.5 })
    await later.revoke()
    await assert.rejects(later.get({ timeout: 20 }), (error: Error) => error.name === 'TaskRevokedError', withLog(later.id))

    assert.deepEqual(await app.control.ping({ timeout: 2 }), [{ [worker!.nodename]: { ok: 'pong' } }])
    const queues = await app.control.inspect('active_queues', {}, { timeout: 2 })
    assert.deepEqual(Object.keys(queues), [worker!.nodename])
  })

  it('updateState: the client reads PROGRESS and its meta through state and info, then the result', async () => {
    const r = await app.sendTask('proj.progress', [3, 0.3])
    const seen: unknown[] = []
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline && !(await r.ready())) {
      // state and info are two reads: info counts when the state was PROGRESS on both sides of it.
      const before = await r.state
      const info = await r.info
      const state = await r.state
      if (before === 'PROGRESS' && state === 'PROGRESS' && !seen.some((s) => JSON.stringify(s) === JSON.stringify(info))) seen.push(info)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.equal(await r.get({ timeout: 5 }), 3, withLog(JSON.stringify(seen)))
    assert.equal(await r.info, 3)
    assert.ok(seen.length >= 2, withLog(JSON.stringify(seen)))
    for (const info of seen) assert.deepEqual(Object.keys(info as object), ['current', 'total'])
  })

  it("worker signals at a warm shutdown (SIGTERM): worker_shutting_down, worker_shutdown (its async receiver waited for), then each slot's worker_process_shutdown", async () => {
    assert.equal(await worker!.stop('SIGTERM'), 0, withLog(''))
    const lines = worker!
      .output()
      .split('\n')
      .filter((l) => /signal worker_(shutting_down|shutdown|process_shutdown)/.test(l))
      .map((l) => l.slice(l.indexOf('signal ')))
    // The async worker_shutdown receiver ends before the pool stops.
    assert.deepEqual(
      lines.slice(0, 3),
      [
        'signal worker_shutting_down SIGTERM Warm',
        `signal worker_shutdown ${worker!.nodename}`,
        `signal worker_shutdown flushed ${worker!.nodename}`,
      ],
      withLog(''),
    )
    assert.deepEqual(lines.slice(3).sort(), ['signal worker_process_shutdown 1', 'signal worker_process_shutdown 2'], withLog(''))
  })
})
