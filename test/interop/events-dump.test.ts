// `tsq events --dump` prints what `celery events --dump` prints: both dumpers
// watch one cluster (a Python worker and a tsq worker, both with -E) while
// tasks run on it, and every line about those tasks is the same in both.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { spawn } from 'node:child_process'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { sleep } from '../helpers/process-group.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import {
  PY_DIR,
  PYTHON,
  REPO_ROOT,
  TSQ_BIN,
  parseJsonOut,
  run,
  runTsq,
  startPythonWorker,
  type PeerEnv,
  type PythonWorker,
} from './helpers/python-worker.js'
import { startTsqWorker, type TsqWorker } from './worker-helpers/tsq-worker.js'

const BACKEND = 'redis://127.0.0.1:6379/1'
const CAPTURE_SECONDS = 20

for (const [kind, broker] of [
  ['redis', REDIS_URL],
  ['amqp', AMQP_URL],
] as const) {
  const skip = await brokerSkipReason(kind)
  describe(`tsq events --dump beside celery events --dump (${kind})`, { skip }, () => {
    // One queue per worker, so that both kinds serve tasks whatever the broker's fairness.
    const peer: PeerEnv = { broker, backend: BACKEND, queue: uniqueName(`tsq-evdump-py-${kind}`) }
    const tsqQueue = uniqueName(`tsq-evdump-tsq-${kind}`)
    let py: PythonWorker | undefined
    let tsq: TsqWorker | undefined

    before(async () => {
      ;[py, tsq] = await Promise.all([
        startPythonWorker({ peer, extraArgs: ['-E'] }),
        startTsqWorker({ env: { ...peer, queue: tsqQueue }, pool: 'threads', events: true }),
      ])
    })

    after(async () => {
      await Promise.all([py?.stop(), tsq?.stop()])
      await deleteCeleryQueues(kind, broker, [peer.queue, tsqQueue])
    })

    it('every line about the tasks is the same in both dumps, from either kind of worker', async () => {
      const env = {
        ...process.env,
        PYTHONPATH: PY_DIR,
        PYTHONDONTWRITEBYTECODE: '1',
        TSQ_INTEROP_BROKER: broker,
        TSQ_INTEROP_BACKEND: BACKEND,
        TSQ_INTEROP_QUEUE: peer.queue,
      }
      const celeryDump = run(PYTHON, ['-m', 'celery', '-A', 'tasks', 'events', '--dump'], {
        cwd: PY_DIR,
        env,
        timeoutMs: (CAPTURE_SECONDS + 1) * 1000,
      })
      const started = Date.now()
      // Both print their banner before they connect: tsq is subscribed once an
      // event follows it (the workers send heartbeats every 2 s); Celery gets
      // a fixed head start.
      const tsqDump = spawn(process.execPath, [TSQ_BIN, 'events', '--dump', '-b', broker, '--timeout', String(CAPTURE_SECONDS)], {
        cwd: REPO_ROOT,
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let tsqStdout = ''
      let tsqStderr = ''
      tsqDump.stdout.setEncoding('utf8').on('data', (d: string) => (tsqStdout += d))
      tsqDump.stderr.setEncoding('utf8').on('data', (d: string) => (tsqStderr += d))
      const tsqExit = new Promise<number | null>((resolve) => tsqDump.once('close', (code) => resolve(code)))
      await waitFor(() => /starting capture\.\.\.\n.+\n/.test(tsqStdout) || tsqDump.exitCode !== null, {
        timeoutMs: 15_000,
        what: 'tsq events subscribed',
      })
      await sleep(Math.max(0, 5_000 - (Date.now() - started)))
      const ids: string[] = []
      for (let i = 0; i < 8; i += 1) {
        const sent = await runTsq(['call', 'proj.add', '-a', `[${i}, ${i}]`, '-b', broker, '-Q', i % 2 ? tsqQueue : peer.queue, '--json'])
        ids.push((parseJsonOut(sent, 'tsq call') as { id: string }).id)
      }
      const [celeryOut, tsqCode] = await Promise.all([celeryDump, tsqExit])
      assert.equal(tsqCode, 0, tsqStderr)
      const tsqOut = { stdout: tsqStdout }
      assert.match(tsqOut.stdout, /^-> evdump: starting capture\.\.\.\n/)
      const served = new Set<string>()
      for (const id of ids) {
        // local_received is each receiver's own arrival time; everything else must match.
        const about = (text: string) =>
          text
            .split('\n')
            .filter((line) => line.includes(id))
            .map((line) => line.replace(/local_received=[\d.]+/, 'local_received=…'))
        const expected = about(celeryOut.stdout)
        assert.ok(
          expected.length >= 3,
          `celery saw ${expected.length} events of ${id}:\n${celeryOut.stdout.slice(-3000)}\n${celeryOut.stderr.slice(-2000)}`,
        )
        assert.deepEqual(about(tsqOut.stdout), expected)
        served.add(expected[0]!.split(' ')[0]!)
      }
      // Both kinds served tasks, so both kinds' events were compared.
      assert.deepEqual([...served].sort(), [py!.nodename, tsq!.nodename].sort(), `served by ${[...served].join(', ')}`)
    })
  })
}
