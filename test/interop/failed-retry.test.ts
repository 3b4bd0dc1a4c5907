// The failed-task inbox's replay, end to end: a Python client (Celery 5.2.6)
// sends 'a\x00b', '\u200b', 18446744073709551617, nested dicts and bytes
// (YAML, which carries bytes and big ints; and JSON, without bytes) to a tsq
// worker, where the task fails; `tsq failed ls` lists it, `tsq failed retry`
// and the dashboard's retry send the kept message again, and the task itself
// finds its arguments exactly as sent. Bulk retry and purge ask for --yes in
// a script; a failure with no kept message and no exact arguments is refused
// with one line. On Redis and on RabbitMQ.
// tsq-test: slow 3
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createResultBackend, type ResultBackend } from '../../src/backends/index.js'
import { dumps, encodeException, resultMetaValue } from '../../src/protocol/index.js'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { startDashboard, type SpawnedDashboard } from '../helpers/dashboard.js'
import { PY_DIR, PYTHON, REPO_ROOT, run, runTsq } from './helpers/python-worker.js'
import { startTsqWorker, type TsqWorker } from './worker-helpers/tsq-worker.js'

const TASKS = join(REPO_ROOT, 'test/fixtures/tasks/failed-replay-tasks.js')

/** The Python client: sends proj.exact_or_fail with the values the fixture expects, prints the id. */
const SEND = `
import os, sys
from celery import Celery
app = Celery('proj', broker=os.environ['FR_BROKER'], backend=os.environ['FR_BACKEND'])
variant = sys.argv[1]
big = 18446744073709551617
inner = {'s': 'a\\x00b', 'z': '\\u200b', 'num': big}
if variant == 'yaml':
    inner['b'] = b'\\x00\\xff'
args = ['a\\x00b', '\\u200b', big, {'outer': {'inner': inner}, 'list': [1, 'x', {'deep': {'deeper': 'a\\x00b'}}]}]
kwargs = {'k': '\\u200b', 'big': -big, 'variant': variant}
if variant == 'yaml':
    args.append(b'\\x00\\x01\\x02\\xff')
    kwargs['blob'] = b'\\xff\\x00'
r = app.send_task('proj.exact_or_fail', args=args, kwargs=kwargs, queue=os.environ['FR_QUEUE'], serializer=variant, priority=3)
print(r.id)
`

const redisSkip = await brokerSkipReason('redis')
const amqpSkip = await brokerSkipReason('amqp')

for (const kind of ['redis', 'amqp'] as const) {
  const skip = kind === 'redis' ? redisSkip : amqpSkip || redisSkip
  describe(`failed-task retry sends the original message again (${kind})`, { skip, timeout: 240_000 }, () => {
    const broker = kind === 'redis' ? REDIS_URL : AMQP_URL
    // A database of its own per broker: the inbox lists every failure its backend holds.
    const backendUrl = REDIS_URL.replace(/\/\d+$/, kind === 'redis' ? '/2' : '/3')
    const queue = uniqueName('tsq-failed')
    const marks = mkdtempSync(join(tmpdir(), 'tsq-failed-marks-'))
    let worker: TsqWorker | undefined
    let dashboard: SpawnedDashboard | undefined
    let backend: ResultBackend | undefined
    const cli = ['-b', broker, '--result-backend', backendUrl]

    const send = async (variant: 'yaml' | 'json'): Promise<string> => {
      const res = await run(PYTHON, ['-c', SEND, variant], {
        cwd: PY_DIR,
        env: { ...process.env, FR_BROKER: broker, FR_BACKEND: backendUrl, FR_QUEUE: queue, PYTHONDONTWRITEBYTECODE: '1' },
        timeoutMs: 60_000,
      })
      assert.equal(res.code, 0, res.stderr)
      return res.stdout.trim()
    }
    const status = async (id: string, want: string): Promise<unknown> => {
      let meta: Awaited<ReturnType<ResultBackend['get']>> = null
      await waitFor(async () => (meta = await backend!.get(id))?.status === want, { timeoutMs: 60_000, what: `${id} ${want}` })
      return meta!.result
    }
    const tsq = (...args: string[]) => runTsq([...args, ...cli], { timeoutMs: 60_000 })

    before(async () => {
      backend = await createResultBackend(backendUrl)
      // Read by the fixture in the worker (its first-run marks).
      process.env.TSQ_FR_MARKS = marks
      worker = await startTsqWorker({
        env: { broker, backend: backendUrl, queue },
        module: TASKS,
        pool: 'solo',
        concurrency: 1,
      })
    })

    after(async () => {
      await dashboard?.stop()
      await worker?.stop()
      await backend?.close()
      rmSync(marks, { recursive: true, force: true })
    })

    it('lists a task that failed on a tsq worker, and `tsq failed retry` sends its message again exactly (YAML: bytes, big ints)', async () => {
      const id = await send('yaml')
      const first = (await status(id, 'FAILURE')) as { exc_message: unknown[] }
      assert.match(String(first.exc_message[0]), /first run fails on purpose \(exact\)/)
      const ls = await tsq('failed', 'ls', '--task', 'proj.exact_*', '--json')
      assert.equal(ls.code, 0, ls.stderr)
      const row = (JSON.parse(ls.stdout) as { taskId: string; replay: string; sources: string[]; worker: string }[]).find(
        (t) => t.taskId === id,
      )
      assert.ok(row, ls.stdout)
      assert.equal(row.replay, 'message')
      assert.deepEqual(row.sources, ['backend', 'kept'])
      assert.equal(row.worker, worker!.nodename)
      const show = await tsq('failed', 'show', id, '--json')
      assert.equal(show.code, 0, show.stderr)
      const shown = JSON.parse(show.stdout) as { message: { contentType: string; priority: number; headers: { id: string } } }
      assert.equal(shown.message.contentType, 'application/x-yaml')
      assert.equal(shown.message.priority, 3)
      assert.equal(shown.message.headers.id, id)
      const retry = await tsq('failed', 'retry', id)
      assert.equal(retry.code, 0, retry.stderr)
      assert.match(retry.stdout, /its kept message sent again/)
      assert.equal(await status(id, 'SUCCESS'), 'exact')
      const again = await tsq('failed', 'ls', '--json')
      assert.ok(
        !(JSON.parse(again.stdout) as { taskId: string }[]).some((t) => t.taskId === id),
        'a retried task that succeeded leaves the inbox',
      )
    })

    it("the dashboard's retry sends the same message again (JSON: 'a\\x00b', '\\u200b', 2^64 + 1)", async () => {
      dashboard = await startDashboard(cli)
      const id = await send('json')
      await status(id, 'FAILURE')
      const listed = (await (await fetch(`${dashboard.url}/api/ui/failed?task=proj.exact_or_fail`)).json()) as {
        tasks: { taskId: string }[]
      }
      assert.ok(listed.tasks.some((t) => t.taskId === id))
      const res = await fetch(`${dashboard.url}/api/ui/retry/${id}`, { method: 'POST' })
      assert.equal(res.status, 200, await res.clone().text())
      assert.deepEqual(await res.json(), { 'task-id': id, how: 'message' })
      assert.equal(await status(id, 'SUCCESS'), 'exact')
    })

    it('bulk retry and purge ask for --yes in a script; with it, every selected task goes', async () => {
      const ids = [await send('json'), await send('yaml')]
      for (const id of ids) await status(id, 'FAILURE')
      const refused = await tsq('failed', 'retry', '--all', '--exception', 'on purpose')
      assert.equal(refused.code, 64, refused.stderr)
      assert.match(refused.stderr, /pass --yes/)
      const retried = await tsq('failed', 'retry', '--all', '--task', 'proj.exact_or_fail', '--since', '10m', '--yes', '--json')
      assert.equal(retried.code, 0, retried.stderr)
      const out = JSON.parse(retried.stdout) as { retried: { taskId: string; how: string }[] }
      assert.deepEqual(out.retried.map((r) => r.taskId).sort(), [...ids].sort())
      for (const id of ids) assert.equal(await status(id, 'SUCCESS'), 'exact')

      const doomed = await send('json')
      await status(doomed, 'FAILURE')
      const unasked = await tsq('failed', 'purge', doomed)
      assert.equal(unasked.code, 64, unasked.stderr)
      const purged = await tsq('failed', 'purge', doomed, '--yes')
      assert.equal(purged.code, 0, purged.stderr)
      assert.equal(await backend!.get(doomed), null)
      const gone = await tsq('failed', 'show', doomed)
      assert.equal(gone.code, 1)
      assert.match(gone.stderr, /not in the failed-task inbox/)
    })

    it('refuses, in one line, a failure with no kept message and no stored arguments', async () => {
      const id = `py-${uniqueName('failure')}`
      const exc = encodeException('ValueError', ['boom'])
      await backend!.store(id, dumps(resultMetaValue({ taskId: id, status: 'FAILURE', result: exc, traceback: null })), 'FAILURE')
      const ls = await tsq('failed', 'ls', '--exception', 'valueerror', '--json')
      const row = (JSON.parse(ls.stdout) as { taskId: string; replay: string | null }[]).find((t) => t.taskId === id)
      assert.equal(row?.replay, null)
      const res = await tsq('failed', 'retry', id)
      assert.equal(res.code, 1)
      assert.match(
        res.stderr,
        /cannot send '.*' again with its exact arguments: its result was stored without them \(set result_extended = True/,
      )
      assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr)
    })
  })
}
