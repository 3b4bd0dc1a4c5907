// On RabbitMQ: a Python Celery 5.2.6 worker and a
// tsq worker (--eta-broker-delay-after 5) consume one queue. Countdown tasks of
// ~20 s, half sent by tsq's sendTask and half by Python's own send_task, are
// shared out by the broker: the ones the Python worker takes it holds until
// their ETA (Celery 5.2 knows no delayed delivery); the ones the tsq worker
// takes it hands to kombu 5.5's delayed-delivery ladder, from which they come
// back to the queue a second before their ETA, for either worker to take and
// hold for the rest. Each must run exactly once, on either worker, not before
// its ETA, and be in the hands of the worker that runs it within 2 s of its ETA
// (the ladder's part); tsq must run its share within 2 s of the ETA too. So the
// message tsq republishes (with the broker's x-death headers added on the way
// back) must be one Celery 5.2.6 runs.
//
// The Python side is test/interop/py/closs_tasks.py, the twin of
// test/fixtures/tasks/conn-loss-tasks.js: the same task name and the same
// Redis records, so runs are counted the same whichever worker ran them.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { sendTask } from '../../src/client/send-task.js'
import { createTransport } from '../../src/transport/index.js'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { sleep } from '../helpers/process-group.js'
import { deleteCeleryQueues, deleteResults } from './helpers/cleanup.js'
import { PY_DIR, PYTHON, PythonWorker, REPO_ROOT, parseJsonOut, run, uniqueNodeName } from './helpers/python-worker.js'
import { startTsqWorker, type TsqWorker } from './worker-helpers/tsq-worker.js'

const skip = await brokerSkipReason('amqp')
const MODULE = resolve(REPO_ROOT, 'test/fixtures/tasks/conn-loss-tasks.js')
const BACKEND = 'redis://127.0.0.1:6379/1'
const COUNTDOWN_S = 20
const PER_SENDER = 5
const ETA_SLACK_MS = 2_000

function pyEnv(): NodeJS.ProcessEnv {
  return { ...process.env, PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1', TSQ_CLOSS_BROKER: AMQP_URL, TSQ_LOSS_REDIS_URL: REDIS_URL }
}

/** `celery -A closs_tasks worker` (prefork -c 2) on `queue`, stopped by its process group; waits for "ready.". */
async function startClossPythonWorker(queue: string): Promise<PythonWorker> {
  const nodename = uniqueNodeName('pyetad')
  const args = [
    '-m',
    'celery',
    '-A',
    'closs_tasks',
    'worker',
    '-n',
    nodename,
    '-c',
    '2',
    '-P',
    'prefork',
    '-Q',
    queue,
    '--without-gossip',
    '--without-mingle',
    '--without-heartbeat',
    '-l',
    'INFO',
  ]
  const child = spawn(PYTHON, args, { cwd: PY_DIR, env: pyEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const worker = new PythonWorker(nodename, { broker: AMQP_URL, backend: '', queue }, child)
  try {
    await waitFor(() => worker.hasExited || /\bready\.\s*$/m.test(worker.log), { timeoutMs: 30_000, what: 'python worker ready' })
    if (worker.hasExited) throw new Error('python worker exited during start-up')
  } catch (err) {
    await worker.stop(2_000)
    throw new Error(`${(err as Error).message}\n--- worker log ---\n${worker.logTail()}`, { cause: err })
  }
  return worker
}

/** When `log` (Celery's or tsq's worker format, local time) last says the task was received, in epoch ms. */
function receivedAt(log: string, id: string): number | undefined {
  const re = new RegExp(
    `^\\[(\\d{4}-\\d\\d-\\d\\d) (\\d\\d:\\d\\d:\\d\\d),(\\d{3}): [^\\]]*\\] Task closs\\.work\\[${id}\\] received$`,
    'gm',
  )
  let last: number | undefined
  for (const m of log.matchAll(re)) last = new Date(`${m[1]}T${m[2]}.${m[3]}`).getTime()
  return last
}

interface Sent {
  id: string
  by: 'tsq' | 'python'
  before: number
  after: number
}

describe('Python Celery 5.2.6 worker and tsq worker (--eta-broker-delay-after 5) share a queue of countdown tasks', { skip }, () => {
  const queue = uniqueName('tsq-etapy')
  const key = uniqueName('tsq-etapy-key')
  const sent: Sent[] = []
  let py: PythonWorker | undefined
  let tsq: TsqWorker | undefined
  let redis: Redis | undefined

  before(async () => {
    redis = new Redis(REDIS_URL)
    ;[py, tsq] = await Promise.all([
      startClossPythonWorker(queue),
      startTsqWorker({
        env: { broker: AMQP_URL, backend: BACKEND, queue },
        module: MODULE,
        pool: 'prefork',
        concurrency: 2,
        extraArgs: ['--eta-broker-delay-after', '5'],
      }),
    ])
  })

  after(async () => {
    await Promise.all([py?.stop(), tsq?.stop()])
    // TSQ_TEST_LOG_DIR=<dir> keeps both workers' logs, for a look after the run.
    if (process.env.TSQ_TEST_LOG_DIR) {
      if (py) writeFileSync(resolve(process.env.TSQ_TEST_LOG_DIR, `${queue}.python.log`), py.log)
      if (tsq) writeFileSync(resolve(process.env.TSQ_TEST_LOG_DIR, `${queue}.tsq.log`), tsq.log)
    }
    await deleteCeleryQueues('amqp', AMQP_URL, [queue])
    await deleteResults(
      BACKEND,
      sent.map((s) => s.id),
    )
    if (redis) {
      await redis.del(`${key}:started`, `${key}:runs`, `${key}:done`, ...sent.map((s) => `${key}:at:${s.id}`))
      await redis.quit()
    }
  })

  it('each task runs exactly once, on either worker, back from the ladder by its ETA', { timeout: 120_000 }, async () => {
    const ids = (by: string) => Array.from({ length: PER_SENDER }, (_, i) => `${key}-${by}-${i}`)
    // tsq's sendTask and Python's send_task, interleaved in time only loosely: both batches go out within a second or two.
    const transport = await createTransport(AMQP_URL)
    await transport.connect()
    try {
      for (const id of ids('tsq')) {
        const before = Date.now()
        await sendTask(transport, 'closs.work', { id, args: [key, 0], queue, exchange: queue, routingKey: queue, countdown: COUNTDOWN_S })
        sent.push({ id, by: 'tsq', before, after: Date.now() })
      }
    } finally {
      await transport.close()
    }
    const res = await run(PYTHON, [resolve(PY_DIR, 'closs_tasks.py'), 'send', queue, key, '0', String(COUNTDOWN_S), ...ids('py')], {
      cwd: PY_DIR,
      env: pyEnv(),
    })
    assert.equal(res.code, 0, `closs_tasks.py send failed:\n${res.stdout}\n${res.stderr}`)
    for (const s of (parseJsonOut(res, 'closs_tasks.py send') as { sent: Array<{ id: string; before: number; after: number }> }).sent)
      sent.push({ ...s, by: 'python' })

    const lastEta = Math.max(...sent.map((s) => s.after + COUNTDOWN_S * 1000))
    await waitFor(async () => (await redis!.scard(`${key}:done`)) >= sent.length, {
      timeoutMs: lastEta - Date.now() + 20_000,
      intervalMs: 100,
      what: `all ${sent.length} tasks done`,
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n--- python worker ---\n${py!.logTail(5000)}\n--- tsq worker ---\n${tsq!.logTail(5000)}`)
    })
    // A second copy would run by its ETA: wait past the last one before counting.
    await sleep(Math.max(0, lastEta + ETA_SLACK_MS + 2_000 - Date.now()))

    const pyLog = py!.log
    const tsqLog = tsq!.log
    const restarted = /CONNECTION_FORCED|Connection to broker lost/.test(tsqLog + pyLog)
      ? ' (the broker was restarted during the test: rerun before concluding)'
      : ''
    const ctx = (msg: string) =>
      `${msg}${restarted}\n--- python worker ---\n${py!.logTail(5000)}\n--- tsq worker ---\n${tsq!.logTail(5000)}`
    const runs = await redis!.hgetall(`${key}:runs`)
    const handed = sent.filter((s) =>
      new RegExp(
        `Task closs\\.work\\[${s.id}\\] has an ETA \\d+ s away: handed to the broker's delayed delivery, back in ${queue} at `,
      ).test(tsqLog),
    )
    const ranOn = (s: Sent) => {
      const onPy = pyLog.includes(`Task closs.work[${s.id}] succeeded`)
      const onTsq = tsqLog.includes(`Task closs.work[${s.id}] succeeded`)
      return onPy && onTsq ? 'both' : onPy ? 'python' : onTsq ? 'tsq' : 'none'
    }
    const rows: string[] = []
    for (const s of sent) {
      const times: number[] = (await redis!.lrange(`${key}:at:${s.id}`, 0, -1)).map(Number)
      assert.equal(Number(runs[s.id] ?? 0), 1, ctx(`${s.id} ran ${runs[s.id] ?? 0} times`))
      assert.equal(times.length, 1, ctx(`${s.id} run times: ${times.join(', ')}`))
      const t = times[0]!
      const earliest = s.before + COUNTDOWN_S * 1000
      const eta = s.after + COUNTDOWN_S * 1000
      assert.ok(t >= earliest, ctx(`${s.id} ran ${earliest - t} ms before its ETA`))
      const where = ranOn(s)
      assert.ok(where === 'python' || where === 'tsq', ctx(`${s.id}: succeeded on ${where}`))
      // The ladder's part: the worker that ran the task had it in hand by its ETA.
      const received = receivedAt(where === 'python' ? pyLog : tsqLog, s.id)
      assert.ok(
        received !== undefined && received <= eta + ETA_SLACK_MS,
        ctx(
          `${s.id} reached the ${where} worker ${received === undefined ? 'never (no "received" line)' : `${received - eta} ms after its ETA`}`,
        ),
      )
      // Holding a task to its ETA is the running worker's own timer. tsq's is held to the slack; Python's is
      // only reported: under CI's parallel lanes its prefork pool was seen to stall ~4 s with both
      // tasks in hand since before their ETA (received 2 s early, run 3.8 s late), which says nothing of tsq.
      if (where === 'tsq') assert.ok(t <= eta + ETA_SLACK_MS, ctx(`${s.id} ran on tsq ${t - eta} ms after its ETA`))
      rows.push(
        `${s.id.slice(key.length + 1)} (sent by ${s.by}${handed.includes(s) ? ', handed to the ladder by tsq' : ''}) reached ${where} ${eta - received} ms before ETA, ran ${t - earliest} ms after it`,
      )
    }
    // The tsq worker took some of the first deliveries (the broker deals them round-robin) and moved them to the ladder.
    assert.ok(handed.length >= 1, ctx('the tsq worker handed no task to the delayed delivery'))
    assert.ok(
      handed.some((s) => s.by === 'python'),
      ctx('no task sent by Python went through the ladder'),
    )
    assert.ok(!py!.hasExited && !tsq!.hasExited, ctx('a worker exited'))
    assert.doesNotMatch(pyLog, /Traceback|ERROR\/|CRITICAL\//, ctx('the python worker logged an error'))
    assert.doesNotMatch(tsqLog, /Uncaught exception|Unhandled promise rejection|ERROR\/|CRITICAL\//, ctx('the tsq worker logged an error'))
    process.stdout.write(`# ${rows.join('\n# ')}\n`)
  })
})
