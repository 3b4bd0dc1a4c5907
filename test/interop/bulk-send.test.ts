// A bulk send (app.sendMany, and a group of chunks) is
// run task by task by a Python Celery 5.2.6 worker, and Celery's own tools see
// ordinary tasks: `celery inspect stats` counts them under their name, and
// `celery events --dump` prints each one received and succeeded.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { createApp, signature, type App } from '../../src/index.js'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { deleteCeleryQueues, deleteResults } from './helpers/cleanup.js'
import { PY_DIR, PYTHON, parseJsonOut, runCelery, startPythonWorker, type PeerEnv, type PythonWorker } from './helpers/python-worker.js'

// The lane's own Redis database (TSQ_TEST_REDIS_URL), as every other test's results.
const BACKEND = REDIS_URL
const BULK = 200
/** Bound on waiting for the dump to show every task (the worker is prefork -c 2, on a loaded machine). */
const DUMP_WAIT_MS = 60_000

for (const [kind, broker] of [
  ['redis', REDIS_URL],
  ['amqp', AMQP_URL],
] as const) {
  const skip = await brokerSkipReason(kind)
  describe(`a bulk send served by a Python Celery worker (${kind})`, { skip }, () => {
    const peer: PeerEnv = { broker, backend: BACKEND, queue: uniqueName(`tsq-bulk-${kind}`) }
    let py: PythonWorker | undefined
    let app: App | undefined
    let dump: ChildProcess | undefined
    const ids: string[] = []

    before(async () => {
      py = await startPythonWorker({ peer, extraArgs: ['-E'] })
      app = createApp({ name: 'proj', broker, resultBackend: BACKEND, defaultQueue: peer.queue })
    })

    after(async () => {
      if (dump?.pid && dump.exitCode === null) process.kill(dump.pid, 'SIGKILL')
      await app?.close()
      await py?.stop()
      await deleteCeleryQueues(kind, broker, [peer.queue])
      await deleteResults(BACKEND, ids).catch(() => undefined)
    })

    it('every task of app.sendMany runs, and celery inspect and celery events see each one', async () => {
      const env = {
        ...process.env,
        PYTHONPATH: PY_DIR,
        PYTHONDONTWRITEBYTECODE: '1',
        PYTHONUNBUFFERED: '1',
        TSQ_INTEROP_BROKER: broker,
        TSQ_INTEROP_BACKEND: BACKEND,
        TSQ_INTEROP_QUEUE: peer.queue,
      }
      dump = spawn(PYTHON, ['-m', 'celery', '-A', 'tasks', 'events', '--dump'], { cwd: PY_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] })
      let dumped = ''
      dump.stdout!.setEncoding('utf8').on('data', (d: string) => (dumped += d))
      dump.stderr!.resume()
      // celery events prints "starting capture" before it subscribes, and a
      // loaded machine takes seconds to get there: a task run before then is
      // never dumped. The worker's heartbeat (every 2 s with -E) in the dump
      // says the subscription is live.
      await waitFor(() => dumped.split('\n').some((line) => line.includes(py!.nodename) && line.includes('heartbeat')), {
        timeoutMs: 60_000,
        intervalMs: 200,
        what: "celery events --dump to receive the worker's heartbeat",
      })

      const results = await app!.sendMany(Array.from({ length: BULK }, (_, i) => signature('proj.add', [i, i])))
      ids.push(...results.map((r) => r.id))
      assert.equal(new Set(ids).size, BULK)
      const values = await Promise.all(results.map((r) => r.get({ timeout: 45 })))
      assert.deepEqual(
        values,
        Array.from({ length: BULK }, (_, i) => 2 * i),
        py!.logTail(),
      )

      // A group of chunks, sent the same way: Celery's celery.starmap runs each chunk.
      const sum = app!.remote<[x: number, y: number], number>('proj.add')
      const chunked = await app!.group(
        ...sum.chunks(
          Array.from({ length: 10 }, (_, i) => [i, 1]),
          4,
        ),
      )
      ids.push(chunked.id, ...chunked.results.map((r) => r.id))
      assert.deepEqual(await chunked.get({ timeout: 30 }), [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [9, 10],
      ])

      const stats = parseJsonOut(
        await runCelery(['inspect', 'stats', '-d', py!.nodename, '--json'], peer, { timeoutMs: 30_000 }),
        'celery inspect stats',
      ) as Record<string, { total?: Record<string, number> }>
      assert.equal(stats[py!.nodename]?.total?.['proj.add'], BULK, JSON.stringify(stats[py!.nodename]?.total))

      // Every sendMany task shows received and succeeded in Celery's dump.
      const unseen = () =>
        ids.slice(0, BULK).filter((id) => {
          const lines = dumped.split('\n').filter((line) => line.includes(id))
          return !lines.some((l) => /task received/.test(l)) || !lines.some((l) => /task succeeded/.test(l))
        })
      await waitFor(() => unseen().length === 0, {
        timeoutMs: DUMP_WAIT_MS,
        intervalMs: 500,
        what: 'celery events --dump to show every task',
      }).catch(() => undefined)
      const missing = unseen()
      assert.deepEqual(
        missing.slice(0, 5),
        [],
        `${missing.length} of ${BULK} tasks not seen received and succeeded by celery events:\n${dumped.slice(-3000)}`,
      )
    })
  })
}
