// Python Celery 5.2.6 as the client of a tsq worker.
// add.delay(2, 2).get() on RabbitMQ with rpc:// and on Redis with redis://, a
// JS exception raised in Python, a Python chain through tsq, an ETA task.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { createApp } from '../../src/index.js'
import { asPythonInts, intsJson, jsDigits } from './helpers/bigints.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { pyClient, startTsqWorker, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'

interface Outcome {
  result?: unknown
  exc_type?: string
  exc_message?: string
  exc_module?: string
  state?: string
  eta?: number
}

const cases = [
  { kind: 'amqp' as const, broker: AMQP_URL, backend: 'rpc://', pool: 'prefork' as const },
  { kind: 'redis' as const, broker: REDIS_URL, backend: 'redis://127.0.0.1:6379/1', pool: 'threads' as const },
]

for (const c of cases) {
  const skip = await brokerSkipReason(c.kind)
  describe(`tsq worker serves Python Celery: ${c.kind} broker, ${c.backend} results, ${c.pool} pool`, { skip }, () => {
    const env: WiEnv = { broker: c.broker, backend: c.backend, queue: uniqueName(`tsq-wi-${c.kind}`) }
    let worker: TsqWorker | undefined

    before(async () => {
      // result_extended only changes key-value results; rpc:// carries no such fields in Celery either.
      worker = await startTsqWorker({ env, pool: c.pool, concurrency: 2, resultExtended: c.backend.startsWith('redis') })
    })

    after(async () => {
      await worker?.stop()
      await deleteCeleryQueues(c.kind, c.broker, [env.queue])
    })

    const withLog = (msg: string) => `${msg}\n--- tsq worker log ---\n${worker?.logTail() ?? ''}`

    it('add.delay(2, 2).get(timeout=10) == 4', async () => {
      const out = await pyClient<Outcome>(env, ['delay', 'proj.add', '[2, 2]', '10'])
      assert.equal(out.result, 4, withLog(JSON.stringify(out)))
      assert.equal(out.state, 'SUCCESS')
    })

    it('integers past 2**53 from Python (64-bit ids) reach the JS task exactly, as BigInt, and come back digit for digit', async () => {
      const out = await pyClient<{ same: boolean; got: string[] }>(env, ['exact', '10'])
      assert.deepEqual(
        out,
        { same: true, got: ['18446744073709551617', '-10000000000000000000007', '9007199254740993', '12345', '1.5'] },
        withLog(JSON.stringify(out)),
      )
    })

    it('integers at every width edge and to 10**40, both signs, through the tsq worker and its result: Python reads each an int, digit for digit', async () => {
      const out = await pyClient<{ result?: unknown; state: string; id: string }>(env, ['ints', 'proj.collect', intsJson(), '20'])
      assert.deepEqual(out.result, asPythonInts(), withLog(JSON.stringify(out)))
      // rpc:// replies go to the Python client alone; a stored redis:// result is read by tsq too.
      if (c.backend.startsWith('redis')) {
        const app = createApp({ broker: c.broker, resultBackend: c.backend })
        try {
          assert.deepEqual(
            jsDigits(await app.asyncResult(out.id).get({ timeout: 20 })),
            asPythonInts().map(([, d]) => d),
          )
        } finally {
          await app.close()
        }
      }
    })

    it('task_compression gzip (kombu zlib): the body is inflated before decoding', async () => {
      const out = await pyClient<Outcome>(env, ['delay', 'proj.add', '[20, 22]', '10', 'gzip'])
      assert.equal(out.result, 42, withLog(JSON.stringify(out)))
    })

    it('a JS TypeError makes get() raise TypeError with the message', async () => {
      const out = await pyClient<Outcome>(env, ['delay', 'proj.fail', '["boom from js"]', '10'])
      assert.equal(out.exc_type, 'TypeError', withLog(JSON.stringify(out)))
      assert.equal(out.exc_message, 'boom from js')
      assert.equal(out.exc_module, 'builtins')
    })

    it('a JS error class unknown to Python keeps its name and message', async () => {
      const out = await pyClient<Outcome>(env, ['delay', 'proj.quota', '["over quota"]', '10'])
      assert.equal(out.exc_type, 'QuotaExceeded', withLog(JSON.stringify(out)))
      assert.equal(out.exc_message, 'over quota')
    })

    it('an unknown task fails as in Celery: get() raises NotRegistered', async () => {
      const out = await pyClient<Outcome>(env, ['delay', 'proj.nope', '[]', '10'])
      assert.equal(out.exc_type, 'NotRegistered', withLog(JSON.stringify(out)))
      assert.match(out.exc_message ?? '', /proj\.nope/)
    })

    it('spec §1.4: a Python chain add(1,2) | add(3) | mul(10) through tsq returns 60', async () => {
      const out = await pyClient<Outcome>(env, ['chain', '20'])
      assert.equal(out.result, 60, withLog(JSON.stringify(out)))
    })

    it('spec §1.7: retry() sends the task again with retries + 1 until it succeeds; get() sees the final value', async () => {
      const out = await pyClient<Outcome>(env, ['delay', 'proj.flaky', '[2]', '20'])
      assert.equal(out.result, 2, withLog(JSON.stringify(out)))
      assert.equal(out.state, 'SUCCESS')
    })

    it('retry() past max_retries fails the task (the retry limit holds)', async () => {
      const out = await pyClient<Outcome>(env, ['delay', 'proj.flaky', '[9]', '20'])
      assert.equal(out.exc_type, 'MaxRetriesExceededError', withLog(JSON.stringify(out)))
    })

    it("update_state: Python's AsyncResult shows PROGRESS and its meta while the task runs, then the result", async () => {
      const out = await pyClient<Outcome & { progress: Array<{ current: number; total: number }> }>(env, ['progress', '4', '0.4', '20'])
      assert.equal(out.result, 4, withLog(JSON.stringify(out)))
      assert.equal(out.state, 'SUCCESS')
      assert.ok(out.progress.length >= 2, `PROGRESS seen ${out.progress.length} times: ${JSON.stringify(out)}`)
      const currents = out.progress.map((p) => p.current)
      assert.deepEqual(
        currents,
        [...currents].sort((a, b) => a - b),
      )
      for (const p of out.progress) assert.equal(p.total, 4)
    })

    it('autoretry_for: a listed error retries the task until it succeeds; past max_retries get() raises that error', async () => {
      const recovered = await pyClient<Outcome>(env, ['delay', 'proj.autoflaky', '[2]', '20'])
      assert.equal(recovered.result, 2, withLog(JSON.stringify(recovered)))
      const exhausted = await pyClient<Outcome>(env, ['delay', 'proj.autoflaky', '[9]', '20'])
      assert.equal(exhausted.exc_type, 'FetchError', withLog(JSON.stringify(exhausted)))
      assert.equal(exhausted.exc_message, 'attempt 3')
    })

    it("a Python client's own message headers reach the JS task as currentTask().headers", async () => {
      const out = await pyClient<Outcome>(env, ['headers', '10'])
      assert.deepEqual(out.result, { traceparent: 'py-trace' }, withLog(JSON.stringify(out)))
    })

    it('spec §1.4: a link runs with the result prepended, a link_error runs after a failure', async () => {
      const out = await pyClient<{ callback: Outcome; errback: Outcome }>(env, ['links', '20'])
      assert.equal(out.callback.result, 40, withLog(JSON.stringify(out)))
      assert.equal(out.errback.result, 2, withLog(JSON.stringify(out)))
    })

    const extendedIt = c.backend.startsWith('redis') ? it : () => undefined
    extendedIt(
      "result_extended: Python's AsyncResult reads name, args, kwargs, worker, retries and queue from the tsq worker's result",
      async () => {
        const out = await pyClient<Outcome & Record<string, unknown>>(env, ['extended', 'proj.autoflaky', '[1]', '20'])
        assert.equal(out.result, 1, withLog(JSON.stringify(out)))
        assert.deepEqual(
          { name: out.name, args: out.args, kwargs: out.kwargs, worker: out.worker, retries: out.retries, queue: out.queue },
          { name: 'proj.autoflaky', args: [1], kwargs: {}, worker: worker!.nodename, retries: 1, queue: env.queue },
        )
      },
    )

    // Celery's Redis backend counts a chord's header tasks (spec §2.3); rpc://
    // has no chords in Celery either (Python refuses them before sending), so
    // the chord cases exist only where the backend is Redis.
    const chordIt = c.backend.startsWith('redis') ? it : () => undefined
    chordIt('spec §2.3: a Python chord of 6 add() headers runs its tsum body on tsq with every result', async () => {
      const out = await pyClient<Outcome & { body: { state: string } }>(env, ['chord', '6', '30'])
      assert.equal(out.result, 30, withLog(JSON.stringify(out)))
      assert.equal(out.body.state, 'SUCCESS')
    })

    chordIt('spec §2.3: a failed header task fails the chord body with ChordError naming it', async () => {
      const out = await pyClient<Outcome & { body: { state: string; exc_type: string | null; exc_message: string | null } }>(env, [
        'chord',
        '4',
        '30',
        '2',
      ])
      // get() re-raises the failed parent's own error first, as Celery does.
      assert.equal(out.exc_type, 'TypeError', withLog(JSON.stringify(out)))
      assert.equal(out.body.state, 'FAILURE', withLog(JSON.stringify(out)))
      assert.equal(out.body.exc_type, 'ChordError')
      assert.match(out.body.exc_message ?? '', /^Dependency [0-9a-f-]{36} raised TypeError\('chord part failed'\)$/)
    })

    it('a Python chain ending in a group: the worker fans the group out with the previous result', async () => {
      const out = await pyClient<Outcome>(env, ['canvas', 'group', '30'])
      assert.deepEqual(out.result, [13, 23], withLog(JSON.stringify(out)))
    })

    chordIt('a Python chain holding a chord (group | task, and chord()): the worker starts the chord', async () => {
      const upgraded = await pyClient<Outcome>(env, ['canvas', 'group_body', '30'])
      assert.equal(upgraded.result, 36, withLog(JSON.stringify(upgraded)))
      const explicit = await pyClient<Outcome>(env, ['canvas', 'chord', '30'])
      assert.equal(explicit.result, 15, withLog(JSON.stringify(explicit)))
    })

    it("add.map, add.starmap and add.chunks run as Celery's built-in celery.map / celery.starmap tasks", async () => {
      const out = await pyClient<Record<string, Outcome>>(env, ['builtins', '30'])
      assert.deepEqual(out.map?.result, [1, 2, 3], withLog(JSON.stringify(out)))
      assert.deepEqual(out.starmap?.result, [2, 5], withLog(JSON.stringify(out)))
      assert.deepEqual(out.chunks?.result, [[0, 2, 4], [6, 8, 10], [12]], withLog(JSON.stringify(out)))
    })

    it('countdown: the task runs at its ETA, not before', async () => {
      const out = await pyClient<Outcome>(env, ['eta', '3', '20'])
      assert.equal(typeof out.result, 'number', withLog(JSON.stringify(out)))
      // Both clocks are this machine's; the ETA travels as ISO with microseconds.
      assert.ok((out.result as number) >= (out.eta as number) - 0.01, `ran at ${String(out.result)}, before its ETA ${String(out.eta)}`)
    })
  })
}
