// tsq-test: slow 4
// On RabbitMQ: a worker with DEFAULT settings holds
// countdown tasks (75 s and 150 s) on a broker whose consumer_timeout is 10 s.
// RabbitMQ closes the channel with 406 "delivery acknowledgement ... timed out"
// and redelivers what it held; the worker must drop its held copies, log ONE
// warning naming a held task, learn the broker's timeout from the 406 (its
// eta-broker-delay threshold falls from 1500 s to 80% of 10 s = 8 s),
// reconnect its consumer, and hand the redelivered copies to the broker's
// delayed delivery. Meanwhile a trickle of tasks without ETA (one every 2 s)
// must keep flowing. Every task runs exactly once, the countdown ones within
// 2 s of their ETA, and the worker never exits.
//
// One solo worker and one prefork (-c 2) worker run side by side, each on its
// own queue, so the file takes about 3 minutes rather than 6.
//
// consumer_timeout is a node-wide setting in RabbitMQ 3.10 (no per-queue
// x-consumer-timeout before 3.12), read by a channel when it OPENS: checked
// here (RabbitMQ 3.10.8) with two channels on one connection, one opened
// before `application:set_env(rabbit, consumer_timeout, 10000)` and one after,
// each holding one unacked delivery: only the later one was closed (406 after
// 61.7 s: the channel checks its oldest unacked delivery on its tick, about
// once a minute). So the test runs on a RabbitMQ node of its own whose
// rabbitmq.conf sets the 10 s: the shared broker, and the tests beside it in
// other lanes, keep the default.
//
// Timing: in every run here the 406 came 60 s after the countdown tasks were
// delivered (the channel's next check after 10 s). The 75 s task then has
// ~15 s to go, more than the learned 8 s, so both countdown tasks are handed
// to the broker's delayed delivery (asserted: the learned threshold at work);
// they come back ~1 s before their ETA and are held for the rest.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { sendTask } from '../../src/client/send-task.js'
import { createTransport, type Transport } from '../../src/transport/index.js'
import { REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { clusterSkipReason, startRabbitCluster, type RabbitCluster } from '../helpers/rabbit-cluster.js'
import { sleep } from '../helpers/process-group.js'
import { deleteResults } from '../interop/helpers/cleanup.js'
import { REPO_ROOT } from '../interop/helpers/python-worker.js'
import { startTsqWorker, type TsqWorker } from '../interop/worker-helpers/tsq-worker.js'

const skip = (await brokerSkipReason('amqp')) || clusterSkipReason()
const MODULE = resolve(REPO_ROOT, 'test/fixtures/tasks/conn-loss-tasks.js')
const BACKEND = 'redis://127.0.0.1:6379/1'
const TIMEOUT_MS = 10_000
const COUNTDOWNS_S = [75, 150]
const TRICKLE_EVERY_MS = 2_000
const TRICKLE_TASK_MS = 50
/** "Promptly" for a task without ETA: sent to finished, reconnect included. */
const TRICKLE_MAX_LATENCY_MS = 5_000
/** How late a countdown task may run after its ETA. */
const ETA_SLACK_MS = 2_000

interface Sent {
  id: string
  /** Date.now() just before and just after sendTask: the ETA it wrote lies between them plus the countdown. */
  before: number
  after: number
  countdownS?: number
}

interface Lane {
  label: string
  pool: 'solo' | 'prefork'
  concurrency: number
  queue: string
  key: string
  worker?: TsqWorker
  countdown: Sent[]
  trickle: Sent[]
}

describe('ETA tasks held past RabbitMQ consumer_timeout (10 s), default worker settings', { skip }, () => {
  const nodeDir = mkdtempSync(join(tmpdir(), 'tsq-etact-rabbit-'))
  let node: RabbitCluster | undefined
  let AMQP_URL = ''
  let redis: Redis | undefined
  const lanes: Lane[] = [
    {
      label: 'solo',
      pool: 'solo',
      concurrency: 1,
      queue: uniqueName('tsq-etact-solo'),
      key: uniqueName('tsq-etact-solo-key'),
      countdown: [],
      trickle: [],
    },
    {
      label: 'prefork -c 2',
      pool: 'prefork',
      concurrency: 2,
      queue: uniqueName('tsq-etact-pf'),
      key: uniqueName('tsq-etact-pf-key'),
      countdown: [],
      trickle: [],
    },
  ]

  before(async () => {
    node = await startRabbitCluster(nodeDir, 1, [`consumer_timeout = ${TIMEOUT_MS}`])
    AMQP_URL = node.nodes[0]!.url
    const effective = await node.nodes[0]!.ctl(['eval', 'application:get_env(rabbit, consumer_timeout).'])
    assert.equal(effective.trim(), `{ok,${TIMEOUT_MS}}`, 'the node of its own has the 10 s consumer_timeout')
  })

  // One hook, so the node stops last (after the workers) and even when cleanup fails.
  after(async () => {
    try {
      await Promise.all(lanes.map((l) => l.worker?.stop()))
      // TSQ_TEST_LOG_DIR=<dir> keeps the workers' logs, for a look after the run.
      if (process.env.TSQ_TEST_LOG_DIR)
        for (const l of lanes) if (l.worker) writeFileSync(resolve(process.env.TSQ_TEST_LOG_DIR, `${l.queue}.log`), l.worker.log)
      const ids = lanes.flatMap((l) => [...l.countdown, ...l.trickle].map((s) => s.id))
      await deleteResults(BACKEND, ids)
      if (redis) {
        for (const l of lanes) {
          const sent = [...l.countdown, ...l.trickle]
          await redis.del(`${l.key}:started`, `${l.key}:runs`, `${l.key}:done`, ...sent.map((s) => `${l.key}:at:${s.id}`))
        }
        await redis.quit()
      }
    } finally {
      await node?.stop()
      rmSync(nodeDir, { recursive: true, force: true })
    }
  })

  it(
    'each countdown task runs once within 2 s of its ETA, the trickle keeps flowing, one warning, the worker goes on',
    { timeout: 300_000 },
    async () => {
      redis = new Redis(REDIS_URL)
      // Started after the timeout was lowered: their channels get 10 s. Default ETA settings (no --eta-broker-delay-after).
      const workers = await Promise.all(
        lanes.map((l) =>
          startTsqWorker({
            env: { broker: AMQP_URL, backend: BACKEND, queue: l.queue },
            module: MODULE,
            pool: l.pool,
            concurrency: l.concurrency,
          }),
        ),
      )
      lanes.forEach((l, i) => (l.worker = workers[i]))

      const transport: Transport = await createTransport(AMQP_URL)
      await transport.connect()
      let n = 0
      const send = async (l: Lane, ms: number, countdownS?: number): Promise<Sent> => {
        const id = `${l.key}-${countdownS === undefined ? 't' : `cd${countdownS}`}-${(n += 1)}`
        const before = Date.now()
        await sendTask(transport, 'closs.work', {
          id,
          args: [l.key, ms],
          queue: l.queue,
          exchange: l.queue,
          routingKey: l.queue,
          ...(countdownS === undefined ? {} : { countdown: countdownS }),
        })
        return { id, before, after: Date.now(), countdownS }
      }
      try {
        for (const l of lanes) for (const cd of COUNTDOWNS_S) l.countdown.push(await send(l, 0, cd))
        const lastEta = Math.max(...lanes.flatMap((l) => l.countdown.map((s) => s.after + s.countdownS! * 1000)))
        // The trickle: one task without ETA per worker every 2 s, for the whole wait.
        while (Date.now() < lastEta + ETA_SLACK_MS) {
          const tick = Date.now()
          for (const l of lanes) l.trickle.push(await send(l, TRICKLE_TASK_MS))
          for (const l of lanes) assert.ok(!l.worker!.hasExited, `${l.label} worker exited:\n${l.worker!.logTail()}`)
          await sleep(Math.max(0, TRICKLE_EVERY_MS - (Date.now() - tick)))
        }
      } finally {
        await transport.close()
      }

      const total = lanes.reduce((a, l) => a + l.countdown.length + l.trickle.length, 0)
      const doneCount = async () => (await Promise.all(lanes.map((l) => redis!.scard(`${l.key}:done`)))).reduce((a, b) => a + b, 0)
      await waitFor(async () => (await doneCount()) >= total, {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: `all ${total} tasks done`,
      }).catch((err: Error) => {
        throw new Error(`${err.message}\n${lanes.map((l) => `--- ${l.label} worker ---\n${l.worker!.logTail(6000)}`).join('\n')}`)
      })
      // A second copy, if the broker or the worker made one, would run by its ETA: a few seconds more to see it.
      await sleep(3_000)

      const report: string[] = []
      for (const l of lanes) {
        const w = l.worker!
        const log = w.log
        // Another test on this broker may restart it (rabbitmqctl stop_app/start_app): its redeliveries upset the timing asserted here.
        const ctx = (msg: string) => `[${l.label}] ${msg}\n--- worker log (tail) ---\n${w.logTail(8000)}`
        assert.ok(!w.hasExited, ctx('the worker exited'))
        const runs = await redis.hgetall(`${l.key}:runs`)
        const at = async (id: string) => (await redis!.lrange(`${l.key}:at:${id}`, 0, -1)).map(Number)

        // The broker's 406, learned from: one warning per close, each naming a different held task.
        const warnings = [
          ...log.matchAll(/Task closs\.work\[([^\]]+)\] was held unacknowledged past RabbitMQ's consumer_timeout \(10 s\)[^\n]*/g),
        ]
        assert.ok(warnings.length >= 1, ctx('no consumer_timeout warning'))
        const named = warnings.map((m) => m[1]!)
        assert.equal(new Set(named).size, named.length, ctx(`a task was named by more than one warning: ${named.join(', ')}`))
        for (const id of named)
          assert.ok(
            l.countdown.some((s) => s.id === id),
            ctx(`the warning names ${id}, not a held countdown task`),
          )
        assert.ok(
          warnings[0]![0].includes('ETAs more than 8 s away now wait in the broker'),
          ctx(`threshold not lowered to 8 s: ${warnings[0]![0]}`),
        )
        assert.match(log, new RegExp(`Dropped \\d+ held task\\(s\\) of ${l.queue} `), ctx('held copies not dropped'))
        assert.doesNotMatch(log, /Uncaught exception|Unhandled promise rejection|ERROR\/|CRITICAL\//, ctx('an error was logged'))

        // Both countdown tasks: exactly one run, not before the ETA, within 2 s after it, and handed to the broker once the 8 s were learned.
        for (const s of l.countdown) {
          const times = await at(s.id)
          assert.equal(Number(runs[s.id] ?? 0), 1, ctx(`countdown ${s.countdownS} s task ${s.id} ran ${runs[s.id] ?? 0} times`))
          assert.equal(times.length, 1, ctx(`countdown task ${s.id} run times: ${times.join(', ')}`))
          const earliest = s.before + s.countdownS! * 1000
          const latest = s.after + s.countdownS! * 1000 + ETA_SLACK_MS
          const t = times[0]!
          assert.ok(t >= earliest, ctx(`countdown ${s.countdownS} s task ran ${earliest - t} ms before its ETA`))
          assert.ok(t <= latest, ctx(`countdown ${s.countdownS} s task ran ${t - (s.after + s.countdownS! * 1000)} ms after its ETA`))
          assert.match(
            log,
            new RegExp(
              `Task closs\\.work\\[${s.id}\\] has an ETA \\d+ s away: handed to the broker's delayed delivery, back in ${l.queue} at `,
            ),
            ctx(`${s.id} was not handed to the delayed delivery`),
          )
          report.push(`${l.label}: ${s.countdownS} s task ran ${t - (s.before + s.countdownS! * 1000)} ms after send+countdown`)
        }

        // The trickle: every task once, promptly.
        let maxLatency = 0
        for (const s of l.trickle) {
          const times = await at(s.id)
          assert.equal(Number(runs[s.id] ?? 0), 1, ctx(`no-ETA task ${s.id} ran ${runs[s.id] ?? 0} times`))
          assert.equal(times.length, 1, ctx(`no-ETA task ${s.id} run times: ${times.join(', ')}`))
          const latency = times[0]! - s.before
          maxLatency = Math.max(maxLatency, latency)
          assert.ok(latency <= TRICKLE_MAX_LATENCY_MS, ctx(`no-ETA task ${s.id} took ${latency} ms from send to done`))
        }
        report.push(
          `${l.label}: ${l.trickle.length} no-ETA tasks, each once, slowest ${maxLatency} ms; ${warnings.length} consumer_timeout warning(s)`,
        )
      }
      // A warm stop still ends it cleanly.
      await Promise.all(
        lanes.map(async (l) => {
          const t0 = Date.now()
          await l.worker!.stop(15_000)
          const code = await l.worker!.exited
          report.push(`${l.label}: warm stop took ${Date.now() - t0} ms, exit ${code}`)
          assert.equal(code, 0, `[${l.label}] warm stop:\n${l.worker!.logTail(4000)}`)
        }),
      )
      process.stdout.write(`# ${report.join('\n# ')}\n`)
    },
  )
})
