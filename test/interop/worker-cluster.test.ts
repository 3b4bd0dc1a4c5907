// A mixed cluster, one Python worker and two tsq workers
// on one queue. `tsq status` and `celery status` both list the three nodes, and
// tasks sent from Python and from `tsq call` are served by both kinds. Every
// node sets Celery's worker_direct, so each can also be sent a task of its own.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { deleteCeleryQueues, deleteRedisExchanges, deleteResults } from './helpers/cleanup.js'
import { PY_DIR, PYTHON, parseJsonOut, runTsq } from './helpers/python-worker.js'
import { celeryJson, pyClient, startTsqWorker, uniqueNodeName, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'
import { spawn } from 'node:child_process'

const BACKEND = 'redis://127.0.0.1:6379/1'
const skip = await brokerSkipReason('redis')

/** The Python worker of the cluster, running worker_app.py's real task bodies. */
async function startPyWorker(env: WiEnv, nodename: string): Promise<{ stop: () => Promise<void>; log: () => string }> {
  const child = spawn(
    PYTHON,
    [
      '-m',
      'celery',
      '-A',
      'worker_app',
      'worker',
      '-n',
      nodename,
      '-c',
      '2',
      '-P',
      'prefork',
      '-Q',
      env.queue,
      '--without-gossip',
      '--without-mingle',
      '-l',
      'INFO',
    ],
    {
      cwd: PY_DIR,
      env: {
        ...process.env,
        PYTHONPATH: PY_DIR,
        PYTHONDONTWRITEBYTECODE: '1',
        TSQ_WI_BROKER: env.broker,
        TSQ_WI_BACKEND: env.backend,
        TSQ_WI_QUEUE: env.queue,
        TSQ_WI_WORKER_DIRECT: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  )
  let log = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (log = (log + d).slice(-100_000)))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (log = (log + d).slice(-100_000)))
  let exited = false
  const exit = new Promise<void>((r) =>
    child.once('exit', () => {
      exited = true
      r()
    }),
  )
  const kill = (sig: NodeJS.Signals) => {
    try {
      process.kill(-(child.pid as number), sig)
    } catch {
      /* gone */
    }
  }
  const stop = async () => {
    if (!exited) {
      try {
        process.kill(child.pid as number, 'SIGTERM')
      } catch {
        /* gone */
      }
      await Promise.race([exit, new Promise((r) => setTimeout(r, 10_000))])
    }
    kill('SIGKILL')
  }
  try {
    await waitFor(() => exited || /\bready\.\s*$/m.test(log), { timeoutMs: 30_000, what: 'python worker ready' })
    if (exited) throw new Error('python worker exited')
  } catch (err) {
    await stop()
    throw new Error(`${(err as Error).message}\n${log.slice(-3000)}`, { cause: err })
  }
  return { stop, log: () => log }
}

describe('mixed cluster: one Python worker and two tsq workers (redis)', { skip }, () => {
  const env: WiEnv = { broker: REDIS_URL, backend: BACKEND, queue: uniqueName('tsq-wi-mix') }
  const pyNode = uniqueNodeName('py')
  const workers: TsqWorker[] = []
  let py: { stop: () => Promise<void>; log: () => string } | undefined
  const taskIds: string[] = []

  before(async () => {
    const [p, a, b] = await Promise.all([
      startPyWorker(env, pyNode),
      startTsqWorker({ env, pool: 'prefork', concurrency: 2, workerDirect: true }),
      startTsqWorker({ env, pool: 'threads', concurrency: 2, workerDirect: true }),
    ])
    py = p
    workers.push(a, b)
  })

  after(async () => {
    await Promise.all([py?.stop(), ...workers.map((w) => w.stop())])
    await deleteCeleryQueues('redis', REDIS_URL, [env.queue, ...nodes().map((n) => `${n}.dq2`)])
    await deleteRedisExchanges(REDIS_URL, ['C.dq2'])
    await deleteResults(BACKEND, taskIds)
  })

  const logsAbout = (ids: string[]) =>
    workers
      .map(
        (w) =>
          `--- ${w.nodename} ---\n${w.log
            .split('\n')
            .filter((l) => ids.some((id) => l.includes(id)))
            .join('\n')}`,
      )
      .join('\n') +
    `\n--- python ---\n${
      py
        ?.log()
        .split('\n')
        .filter((l) => ids.some((id) => l.includes(id)))
        .join('\n') ?? ''
    }`

  const nodes = () => [pyNode, ...workers.map((w) => w.nodename)]

  it('tsq status --json and celery status --json both list the three nodes', async () => {
    const [tsqRes, celeryReplies] = await Promise.all([
      runTsq(['status', '-b', env.broker, '--json', '-t', '3']),
      celeryJson(env, ['status', '-t', '3']),
    ])
    const tsqReplies = parseJsonOut(tsqRes, 'tsq status') as Record<string, unknown>
    for (const n of nodes()) {
      assert.deepEqual(tsqReplies[n], { ok: 'pong' }, `tsq status: ${n} in ${tsqRes.stdout}`)
      assert.deepEqual(
        (celeryReplies as Record<string, unknown>)[n],
        { ok: 'pong' },
        `celery status: ${n} in ${JSON.stringify(celeryReplies)}`,
      )
    }
  })

  it('tasks from Python are served by both kinds of worker', async () => {
    // Which node served a task is only known to the task, so proj.whoami returns it.
    const seen = new Set<string>()
    for (let round = 0; round < 5 && seen.size < 3; round++) {
      const batch = Array.from({ length: 60 }, () => ['proj.whoami', [], null])
      const { ids } = await pyClient<{ ids: string[] }>(env, ['send_batch', JSON.stringify(batch)])
      taskIds.push(...ids)
      const { items } = await pyClient<{ items: { id: string; state: string; result: string }[] }>(env, [
        'collect',
        JSON.stringify(ids),
        '20',
      ])
      const stuck = items.filter((i) => i.state !== 'SUCCESS')
      assert.deepEqual(stuck, [], logsAbout(stuck.map((i) => i.id)))
      for (const i of items) seen.add(i.result)
    }
    for (const n of nodes()) assert.ok(seen.has(n), `${n} served nothing; served by: ${[...seen].join(', ')}`)
  })

  // Python and tsq workers count the parts of one chord in the same Redis
  // keys (spec §2.3), so whichever kind runs the last header task sends the
  // body. Five chords of 12 give both kinds their turn at that.
  it('chords whose header tasks run on both kinds of worker complete, whoever ends them', async () => {
    for (let round = 0; round < 5; round += 1) {
      const out = await pyClient<{ result?: unknown; body: { state: string } }>(env, ['chord', '12', '30'])
      assert.equal(
        out.result,
        132,
        `round ${round}: ${JSON.stringify(out)}\n${workers.map((w) => w.logTail()).join('\n')}\n${py?.log().slice(-3000) ?? ''}`,
      )
      assert.equal(out.body.state, 'SUCCESS')
    }
  })

  it('tasks from `tsq call` are served by both kinds of worker', async () => {
    const seen = new Set<string>()
    for (let round = 0; round < 5 && seen.size < 3; round += 1) {
      const batch = await Promise.all(
        Array.from({ length: 6 }, () => runTsq(['call', 'proj.whoami', '-b', env.broker, '-Q', env.queue, '--json'])),
      )
      const ids = batch.map((res) => {
        assert.equal(res.code, 0, res.stderr)
        return (parseJsonOut(res, 'tsq call') as { id: string }).id
      })
      taskIds.push(...ids)
      const states = await Promise.all(ids.map((id) => pyClient<{ state: string; result: string }>(env, ['get', id, '20'])))
      for (const st of states) {
        assert.equal(st.state, 'SUCCESS', JSON.stringify(st))
        seen.add(st.result)
      }
    }
    for (const n of nodes()) assert.ok(seen.has(n), `${n} served nothing; served by: ${[...seen].join(', ')}`)
  })

  it("worker_direct: a task sent to a node's own queue (C.dq2, keyed by node name) runs on that node, whichever kind it is", async () => {
    for (const n of nodes()) {
      const out = await pyClient<{ result?: unknown }>(env, ['direct', n, '20'])
      assert.equal(out.result, n, `${JSON.stringify(out)}\n${logsAbout([n])}`)
    }
    const target = workers[1]!.nodename
    const res = await runTsq(['call', 'proj.whoami', '-b', env.broker, '--exchange', 'C.dq2', '--routing-key', target, '--json'])
    assert.equal(res.code, 0, res.stderr)
    const { id } = parseJsonOut(res, 'tsq call') as { id: string }
    taskIds.push(id)
    assert.equal((await pyClient<{ result: string }>(env, ['get', id, '20'])).result, target)
  })

  it('worker_direct: active_queues lists the direct queue as the Python worker lists its own', async () => {
    const replies = (await celeryJson(env, ['inspect', 'active_queues', '-t', '3'])) as Record<
      string,
      { name: string; routing_key: string }[]
    >
    const direct = (n: string) => replies[n]?.find((q) => q.name === `${n}.dq2`)
    const reference = direct(pyNode)
    assert.ok(reference, `the Python worker lists no direct queue: ${JSON.stringify(replies[pyNode])}`)
    for (const w of workers) {
      const mine = direct(w.nodename)
      assert.ok(mine, `${w.nodename} lists no direct queue: ${JSON.stringify(replies[w.nodename])}`)
      assert.deepEqual({ ...mine, name: '', routing_key: '' }, { ...reference, name: '', routing_key: '' })
      assert.equal(mine.routing_key, w.nodename)
    }
  })
})
