// The dashboard's retry of a task a Python client sent and a Celery 5.2.6
// worker ran (result_extended on): the new message carries the original
// arguments exactly ('a\x00b', '\u200b', ints beyond 2^64, a float 2.0), as
// the Python task itself reports; a task whose arguments the backend does not
// hold is refused with the reason, not re-sent with arguments rebuilt from
// their repr.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { startDashboard, type SpawnedDashboard } from '../helpers/dashboard.js'
import { sleep } from '../helpers/process-group.js'
import { PY_DIR, PYTHON, PythonWorker, run, uniqueNodeName } from './helpers/python-worker.js'

const skip = await brokerSkipReason('redis')

describe('dashboard retry sends the original arguments exactly (Python client and worker)', { skip, timeout: 180_000 }, () => {
  const broker = REDIS_URL
  const backend = REDIS_URL.replace(/\/\d+$/, '/1')
  const queue = uniqueName('tsq-retry')
  const env = {
    ...process.env,
    PYTHONPATH: PY_DIR,
    PYTHONDONTWRITEBYTECODE: '1',
    TSQ_INTEROP_BROKER: broker,
    TSQ_INTEROP_BACKEND: backend,
    TSQ_INTEROP_QUEUE: queue,
  }
  let worker: PythonWorker | undefined
  let dashboard: SpawnedDashboard | undefined

  const python = async (script: string, ...args: string[]): Promise<string> => {
    const res = await run(PYTHON, ['-c', `from retry_app import app\nimport sys\n${script}`, ...args], {
      env,
      cwd: PY_DIR,
      timeoutMs: 60_000,
    })
    assert.equal(res.code, 0, res.stderr)
    return res.stdout.trim()
  }
  const state = async (id: string): Promise<string | null> => {
    const res = await fetch(`${dashboard!.url}/api/task/info/${id}`)
    return res.status === 200 ? ((await res.json()) as { state: string }).state : null
  }

  before(async () => {
    const nodename = uniqueNodeName('retry')
    const child = spawn(
      PYTHON,
      [
        '-m',
        'celery',
        '-A',
        'retry_app',
        'worker',
        '-n',
        nodename,
        '-c',
        '1',
        '-P',
        'solo',
        '-E',
        '-Q',
        queue,
        '--without-gossip',
        '--without-mingle',
        '-l',
        'INFO',
      ],
      { cwd: PY_DIR, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    )
    worker = new PythonWorker(nodename, { broker, backend, queue }, child)
    await waitFor(() => /\bready\.\s*$/m.test(worker!.log) || worker!.hasExited, { timeoutMs: 60_000, what: 'the Python worker ready' })
    assert.equal(worker.hasExited, false, worker.logTail())
    dashboard = await startDashboard(['-b', broker, '--result-backend', backend])
    // The dashboard binds its event queue just after it says where it listens.
    await sleep(1000)
  })

  after(async () => {
    await dashboard?.stop()
    await worker?.stop()
  })

  it("re-sends 'a\\x00b', '\\u200b', 18446744073709551617 and 2.0 as sent", async () => {
    const sent = await python(
      "r = app.send_task('proj.echo_repr', args=['a\\x00b', '\\u200b', 18446744073709551617, 2.0], kwargs={'k': '\\u200b', 'n': -18446744073709551617})\nprint(r.id)\nprint(r.get(timeout=60))",
    )
    const [id, firstRepr] = sent.split('\n')
    assert.equal(firstRepr, "(('a\\x00b', '\\u200b', 18446744073709551617, 2.0), {'k': '\\u200b', 'n': -18446744073709551617})")
    await waitFor(async () => (await state(id!)) === 'SUCCESS', { timeoutMs: 30_000, what: 'the dashboard to see the task succeed' })
    const res = await fetch(`${dashboard!.url}/api/ui/retry/${id}`, { method: 'POST' })
    assert.equal(res.status, 200, await res.clone().text())
    const again = ((await res.json()) as { 'task-id': string })['task-id']
    assert.notEqual(again, id)
    assert.equal(await python('print(app.AsyncResult(sys.argv[1]).get(timeout=60))', again), firstRepr)
  })

  it('refuses a task whose arguments the backend does not hold, saying why', async () => {
    const id = await python("r = app.send_task('proj.echo_repr', args=[1], ignore_result=True)\nprint(r.id)")
    await waitFor(async () => (await state(id)) === 'SUCCESS', { timeoutMs: 30_000, what: 'the dashboard to see the task succeed' })
    const res = await fetch(`${dashboard!.url}/api/ui/retry/${id}`, { method: 'POST' })
    assert.equal(res.status, 409)
    assert.match(
      ((await res.json()) as { error: string }).error,
      /cannot send '.*' again with its exact arguments: the result backend holds nothing for it/,
    )
  })
})
