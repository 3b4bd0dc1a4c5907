// Gossip across kinds, on RabbitMQ and on Redis: a Python Celery 5.2.6 worker
// and tsq workers follow each other's heartbeats. When a tsq worker dies
// (kill -9) the Python worker logs "missed heartbeat from <tsq node>", and when
// the Python worker dies a tsq worker logs it for the Python node. Heartbeats
// every second on both sides, so a dead node is missed after 2 s and reported
// at the next 5-second check.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { GroupProcess } from '../helpers/process-group.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { PY_DIR, PYTHON } from './helpers/python-worker.js'
import { startTsqWorker, uniqueNodeName, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'

const BACKEND = 'redis://127.0.0.1:6379/1'
const started: GroupProcess[] = []
after(async () => {
  for (const p of started.splice(0)) await p.stopWith(() => undefined, 0)
})

function kill9(p: GroupProcess): Promise<void> {
  return p.stopWith(() => process.kill(-p.pid, 'SIGKILL'), 5_000)
}

async function startGossipingPythonWorker(env: WiEnv, nodename: string): Promise<GroupProcess> {
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
      '-P',
      'solo',
      '-Q',
      env.queue,
      '--without-mingle',
      '--heartbeat-interval',
      '1',
      '-l',
      'DEBUG',
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
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  )
  const py = new GroupProcess(child, 2_000_000)
  started.push(py)
  await waitFor(() => py.hasExited || /\bready\.\s*$/m.test(py.log), { timeoutMs: 30_000, what: 'python worker ready' })
  if (py.hasExited) throw new Error(`python worker exited:\n${py.logTail()}`)
  return py
}

for (const [kind, broker] of [
  ['amqp', AMQP_URL],
  ['redis', REDIS_URL],
] as const) {
  const skip = await brokerSkipReason(kind)
  describe(`[gossip] Python Celery and tsq workers follow each other's heartbeats (${kind})`, { skip }, () => {
    it('each kind reports the other\'s death as "missed heartbeat from <node>"', { timeout: 90_000 }, async () => {
      const env: WiEnv = { broker, backend: BACKEND, queue: uniqueName(`tsq-wi-gossip-${kind}`) }
      const tsqs: TsqWorker[] = []
      const startTsq = async (gossip: boolean) => {
        const w = await startTsqWorker({
          env,
          pool: 'solo',
          concurrency: 1,
          loglevel: 'DEBUG',
          gossip,
          extraArgs: ['--heartbeat-interval', '1'],
        })
        tsqs.push(w)
        started.push(w)
        return w
      }
      try {
        const watcher = await startTsq(true)
        const doomed = await startTsq(false)
        const pyNode = uniqueNodeName('pygossip')
        const py = await startGossipingPythonWorker(env, pyNode)
        await waitFor(() => watcher.log.includes(`${pyNode} joined the party`), {
          timeoutMs: 10_000,
          what: 'the tsq worker to hear the Python worker',
        })
        await waitFor(() => py.log.includes(`${doomed.nodename} joined the party`), {
          timeoutMs: 10_000,
          what: 'the Python worker to hear the tsq worker',
        })

        await kill9(doomed)
        await waitFor(() => py.log.includes(`missed heartbeat from ${doomed.nodename}`), {
          timeoutMs: 15_000,
          what: "the Python worker to miss the tsq worker's heartbeats",
        })
        await waitFor(() => watcher.log.includes(`missed heartbeat from ${doomed.nodename}`), {
          timeoutMs: 10_000,
          what: "the tsq worker to miss its tsq peer's heartbeats",
        })

        await kill9(py)
        await waitFor(() => watcher.log.includes(`missed heartbeat from ${pyNode}`), {
          timeoutMs: 15_000,
          what: "the tsq worker to miss the Python worker's heartbeats",
        })
        await watcher.stop()
        assert.equal(await watcher.exited, 0, watcher.logTail())
      } finally {
        for (const w of tsqs) await w.stop(2_000)
        await deleteCeleryQueues(kind, broker, [env.queue])
      }
    })
  })
}
