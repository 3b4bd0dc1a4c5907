// tsq-test: slow
// A Python app and a tsq app with the same Celery
// configuration (test/interop/py/cfg_settings_app.py and its twin
// test/fixtures/tasks/cfg-settings-app.js: a priority queue declared with
// x-max-priority 10, task_queues with a topic exchange bound by two routing
// keys, task_default_priority 3, task_annotations with a rate limit; on Redis,
// broker_transport_options with global_keyprefix and every other layout option
// kombu reads set to a value other than its default) on one broker, RabbitMQ
// then Redis:
//  1. tsq sends first (declaring the queues as the conf says), Python sends
//     after (declaring them again: no 406), then a tsq worker alone (-c 1,
//     prefetch 1) runs the lot: in priority order as Celery keeps it on that
//     broker (RabbitMQ: highest first; Redis: kombu's steps 0, 3, 6, 9, lowest
//     first), Python's tasks among them;
//  2. the same with a Python worker alone, tsq's tasks among them;
//  3. both workers side by side, tasks sent through the topic exchange by both
//     apps with both routing keys: each runs exactly once, and each worker
//     reports the annotation's rate limit for the task; inspect from Python
//     and from tsq reaches both (through the prefixed pidbox on Redis), and on
//     Redis the bindings live under the prefix only.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import type { App } from '../../src/app/app.js'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { PY_DIR, PYTHON, PythonWorker, REPO_ROOT, parseJsonOut, run, runTsq, uniqueNodeName } from './helpers/python-worker.js'
import { startTsqWorker, type TsqWorker } from './worker-helpers/tsq-worker.js'

const REDIS_DB11 = 'redis://127.0.0.1:6379/11'
const MODULE = resolve(REPO_ROOT, 'test/fixtures/tasks/cfg-settings-app.js')

interface Case {
  kind: 'amqp' | 'redis'
  broker: string
  /** The order a lone worker runs [tag, priority] sends queued before it started, as Celery orders them on this broker. */
  order(sent: Array<[string, number]>): string[]
}

/** Stable sort by key: ties keep their send order, as both brokers keep FIFO within one priority. */
function stableBy(sent: Array<[string, number]>, key: (p: number) => number): string[] {
  return sent
    .map((s, i) => ({ s, i }))
    .sort((a, b) => key(a.s[1]) - key(b.s[1]) || a.i - b.i)
    .map(({ s }) => s[0])
}

const CASES: Case[] = [
  // RabbitMQ: the higher the priority, the sooner (x-max-priority 10).
  { kind: 'amqp', broker: AMQP_URL, order: (sent) => stableBy(sent, (p) => -p) },
  // kombu's Redis with priority_steps [0, 5]: a priority goes to the list of its step (the largest not above it), served 0 first.
  { kind: 'redis', broker: REDIS_DB11, order: (sent) => stableBy(sent, (p) => (p >= 5 ? 5 : 0)) },
]

for (const c of CASES) {
  const skip = await brokerSkipReason(c.kind)
  describe(
    `[task_queues, task_queue arguments, task_default_priority, task_annotations] a Python and a tsq app of one configuration on ${c.kind}`,
    { skip },
    () => {
      const id = uniqueName(`cfg-${c.kind}`)
      const PRIO = `cfg-prio-${id}`
      const TOPIC = `cfg-topic-${id}`
      const RUNS = `cfg-runs-${id}`
      const KEYPREFIX = `cfg-${id}:`
      const cfgEnv = { CFG_ID: id, CFG_BROKER: c.broker, CFG_REDIS: REDIS_DB11, CFG_KEYPREFIX: KEYPREFIX }
      const env = { ...process.env, ...cfgEnv, PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1', NO_COLOR: '1' }
      let app: App
      let py: PythonWorker | undefined
      let redis: Redis
      const workers: Array<TsqWorker | PythonWorker> = []

      async function pySend(args: string[]): Promise<void> {
        const res = await run(PYTHON, [resolve(PY_DIR, 'cfg_settings_app.py'), ...args], { cwd: PY_DIR, env, timeoutMs: 60_000 })
        assert.equal(res.code, 0, `cfg_settings_app.py ${args.join(' ')}: ${res.stderr}`)
        parseJsonOut(res, 'cfg_settings_app.py')
      }

      /** tsq's sends, through the app's own task (so task_default_priority applies when none is given). */
      async function tsqSend(tag: string, priority: number | null): Promise<void> {
        await app.tasks.get('cfg.record')!.applyAsync([tag], {}, priority === null ? {} : { priority })
      }

      async function startPy(): Promise<PythonWorker> {
        const nodename = uniqueNodeName('pycfg')
        const args = [
          '-m',
          'celery',
          '-A',
          'cfg_settings_app',
          'worker',
          '-n',
          nodename,
          '-c',
          '1',
          '-P',
          'solo',
          '--prefetch-multiplier',
          '1',
          '-Q',
          `${PRIO},${TOPIC}`,
          '--without-gossip',
          '--without-mingle',
          '--without-heartbeat',
          '-l',
          'INFO',
        ]
        const child = spawn(PYTHON, args, { cwd: PY_DIR, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
        const worker = new PythonWorker(nodename, { broker: c.broker, backend: '', queue: PRIO }, child)
        workers.push(worker)
        try {
          await waitFor(() => worker.hasExited || /\bready\.\s*$/m.test(worker.log), { timeoutMs: 60_000, what: 'python worker ready' })
          if (worker.hasExited) throw new Error('python worker exited during start-up')
        } catch (err) {
          throw new Error(`${(err as Error).message}\n--- worker log ---\n${worker.logTail()}`, { cause: err })
        }
        return worker
      }

      async function startTsq(concurrency: number): Promise<TsqWorker> {
        // No -Q override of the definitions: -Q names the queues, task_queues says how they are declared.
        Object.assign(process.env, cfgEnv)
        const worker = await startTsqWorker({
          env: { broker: c.broker, backend: REDIS_DB11, queue: `${PRIO},${TOPIC}` },
          module: MODULE,
          pool: 'solo',
          concurrency,
          extraArgs: ['--prefetch-multiplier', '1'],
          readyTimeoutMs: 60_000,
        })
        workers.push(worker)
        return worker
      }

      async function runs(n: number): Promise<string[]> {
        try {
          return await waitFor(
            async () => {
              const got = await redis.lrange(RUNS, 0, -1)
              return got.length >= n ? got : null
            },
            { timeoutMs: 90_000, intervalMs: 200, what: `${n} runs in ${RUNS}` },
          )
        } catch (error) {
          const logs = workers
            .filter((w) => !w.hasExited)
            .map((w) => `--- ${w.nodename} ---\n${w.logTail()}`)
            .join('\n')
          throw new Error(`${(error as Error).message}; ran: ${(await redis.lrange(RUNS, 0, -1)).join(' ')}\n${logs}`, { cause: error })
        }
      }

      before(async () => {
        Object.assign(process.env, cfgEnv)
        app = ((await import(`${MODULE}?${id}`)) as { app: App }).app
        redis = new Redis(REDIS_DB11)
      })

      after(async () => {
        await Promise.all(workers.map((w) => w.stop(10_000)))
        await app?.close()
        await deleteCeleryQueues(c.kind, c.broker, [PRIO, TOPIC]).catch(() => undefined)
        await redis?.del(RUNS)
        const prefixed = (await redis?.keys(`${KEYPREFIX}*`)) ?? []
        if (prefixed.length) await redis.del(...prefixed)
        redis?.disconnect()
      })

      it("a lone tsq worker runs tsq's and Python's sends in Celery's priority order (tsq declared the queues first, Python again: no 406)", async () => {
        const sent: Array<[string, number]> = [
          ['t5', 5],
          ['t0', 0],
          ['td', 3],
          ['p1', 1],
          ['p9', 9],
          ['pd', 3],
        ]
        await tsqSend('t5', 5)
        await tsqSend('t0', 0)
        await tsqSend('td', null)
        await pySend(['send', 'p1:1', 'p9:9', 'pd:-'])
        const worker = await startTsq(1)
        const got = await runs(sent.length)
        await worker.stop()
        assert.deepEqual(
          got,
          c.order(sent).map((t) => `${t}:tsq`),
        )
        assert.doesNotMatch(worker.log, /PRECONDITION_FAILED|inequivalent/)
        await redis.del(RUNS)
      })

      it("a lone Python worker runs Python's and tsq's sends in the same order", async () => {
        const sent: Array<[string, number]> = [
          ['p2', 2],
          ['pd', 3],
          ['p7', 7],
          ['t9', 9],
          ['t1', 1],
          ['td', 3],
        ]
        await pySend(['send', 'p2:2', 'pd:-', 'p7:7'])
        await tsqSend('t9', 9)
        await tsqSend('t1', 1)
        await tsqSend('td', null)
        // Kept running for the side-by-side case.
        py = await startPy()
        const got = await runs(sent.length)
        assert.deepEqual(
          got,
          c.order(sent).map((t) => `${t}:python`),
        )
        assert.doesNotMatch(py.log, /PRECONDITION_FAILED|inequivalent/)
        await redis.del(RUNS)
      })

      it("side by side: both workers consume both queues; the topic exchange's two routing keys reach the bound queue from both apps; each task runs once", async () => {
        py ??= await startPy()
        const tsq = await startTsq(2)
        const tags: string[] = []
        const pyItems: string[] = []
        for (let i = 0; i < 4; i++) {
          pyItems.push(`pt${i}@${i % 2 ? 'a.py' : 'b.py'}`, `pq${i}:${i}`)
          await app.tasks.get('cfg.record')!.applyAsync([`tt${i}`], {}, { exchange: TOPIC, routingKey: i % 2 ? 'b.tsq' : 'a.tsq' })
          await tsqSend(`tq${i}`, i)
          tags.push(`pt${i}`, `tt${i}`, `tq${i}`, `pq${i}`)
        }
        await pySend(['send', ...pyItems])
        const got = await runs(tags.length)
        // Nothing more arrives: each ran once.
        await new Promise((r) => setTimeout(r, 1500))
        const all = await redis.lrange(RUNS, 0, -1)
        assert.deepEqual(all.map((r) => r.split(':')[0]).sort(), [...tags].sort())
        assert.equal(all.length, got.length)
        assert.ok(all.every((r) => /:(tsq|python)$/.test(r)))
        // task_annotations' rate limit, as each worker reports it to Python's inspect.
        for (const node of [py!.nodename, tsq.nodename]) {
          const res = await run(
            PYTHON,
            ['-m', 'celery', '-A', 'cfg_settings_app', 'inspect', 'registered', 'rate_limit', '-d', node, '-t', '10', '--json'],
            { cwd: PY_DIR, env, timeoutMs: 60_000 },
          )
          assert.equal(res.code, 0, res.stderr)
          const replies = JSON.parse(res.stdout.trim().split('\n')[0]!) as Record<string, string[]>
          assert.ok(replies[node]?.includes('cfg.record [rate_limit=600/m]'), `${node}: ${res.stdout}`)
        }
        // tsq's inspect reaches both workers too (the pidbox and reply queues under the app's layout on Redis).
        const ping = await runTsq(['-A', MODULE, 'inspect', 'ping', '-d', `${py!.nodename},${tsq.nodename}`, '-t', '10', '--json'], {
          env: cfgEnv,
          timeoutMs: 60_000,
        })
        assert.equal(ping.code, 0, ping.stderr)
        assert.deepEqual(JSON.parse(ping.stdout), { [py!.nodename]: { ok: 'pong' }, [tsq.nodename]: { ok: 'pong' } })
        if (c.kind === 'redis') {
          // kombu's members `rk<sep>pattern<sep>queue` with sep ':', in the prefixed set only.
          assert.deepEqual((await redis.smembers(`${KEYPREFIX}_kombu.binding.${TOPIC}`)).sort(), [
            `a.*:^a\\..*?[^\\.]$:${TOPIC}`,
            `b.*:^b\\..*?[^\\.]$:${TOPIC}`,
          ])
          assert.equal(await redis.exists(`_kombu.binding.${TOPIC}`, `_kombu.binding.${PRIO}`, PRIO, `${PRIO}:5`), 0)
          assert.equal(await redis.exists(`${KEYPREFIX}_kombu.binding.celery.pidbox`), 1)
        }
        for (const w of [py!, tsq]) assert.doesNotMatch(w.log, /PRECONDITION_FAILED|inequivalent/)
      })
    },
  )
}
