// The suite of test/interop/rabbitmq-cluster-*.test.ts (one file per scenario, so each lane runs one):
// tsq over a 3-node RabbitMQ cluster with quorum queues, given the failover list of the three nodes.
//
// One cluster per file (three rabbitmq-server nodes on 127.0.0.1, their own
// node names, ports and data, joined with `rabbitmqctl join_cluster`, booted in
// parallel), one redis-server of its own for the tasks' records.
//
// 1. Failover (rabbitmq-cluster-failover.test.ts): 5,000 tasks on a quorum queue
//    (task_default_queue_type = 'quorum'), 4,000 sent by tsq and 1,000 by a Python Celery 5.2.6 client,
//    run by two tsq workers and a Python Celery worker, all given the list.
//    Mid-run the node the workers are connected to stops (its RabbitMQ
//    application: rabbitmqctl stop_app), and comes back; then the queue's
//    leader, on a second node, stops. Every task finishes at least once; a
//    task ran twice only if it started before a stop, and the repeats stay
//    within the in-flight bound (each worker's prefetch window, per stop).
// 2. ETA tasks on a quorum queue (rabbitmq-cluster-eta.test.ts): 1,000 tasks with countdowns spread over
//    1-60 s go through kombu 5.5's native delayed delivery (the broker holds
//    them), so `inspect scheduled` shows the workers holding only those due
//    within a second or two; one worker restarts in the middle; none is lost,
//    none runs before its ETA, and the lateness is printed (the 1 s goal is
//    reported, with a loose bound asserted: the machine is shared).
//
// Each file takes two to three minutes (the cluster's start is one of them).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { queueSettings } from '../../../src/config/queues.js'
import { sendTask } from '../../../src/client/send-task.js'
import { BROKER_QUEUE_HOLD_S } from '../../../src/worker/task-path/task-runner.js'
import { createTransport, type Transport } from '../../../src/transport/index.js'
import { uniqueName } from '../../helpers/brokers.js'
import { BIN, ROOT, runTsq } from '../../helpers/cli.js'
import { GroupProcess, sleep } from '../../helpers/process-group.js'
import { clusterSkipReason, startRabbitCluster, type RabbitCluster, type RabbitNode } from '../../helpers/rabbit-cluster.js'
import { freePort } from './tls-brokers.js'
import { PY_DIR, PYTHON } from './python-worker.js'

const APP = 'test/fixtures/tasks/cluster-tasks.js'
const TASKS = Number(process.env.TSQ_CLUSTER_TASKS ?? 5000)
const PY_SENT = Math.round(TASKS / 5)
const ETA_TASKS = Number(process.env.TSQ_CLUSTER_ETA_TASKS ?? 1000)
const ETA_SPREAD_S = 60
// Long enough that the second half is still queued when its stop comes, even when sends go slowly and workers fast.
const TASK_MS = 250
const FULL_LOG = 50_000_000
const TSQ_CONCURRENCY = 6
const PREFETCH_MULTIPLIER = 4

const skip = clusterSkipReason()
const dir = mkdtempSync(join(tmpdir(), 'tsq-cluster-'))
let cluster: RabbitCluster | undefined
let redisProc: GroupProcess | undefined
let redisUrl = ''
let redis: Redis | undefined
const procs: GroupProcess[] = []

async function startRedis(): Promise<void> {
  const port = await freePort()
  redisProc = new GroupProcess(
    spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  )
  const deadline = Date.now() + 30_000
  while (!redisProc.log.includes('Ready to accept connections')) {
    if (redisProc.hasExited || Date.now() > deadline) throw new Error(`redis-server did not start:\n${redisProc.logTail()}`)
    await sleep(50)
  }
  redisUrl = `redis://127.0.0.1:${port}/0`
  redis = new Redis(redisUrl)
}

function workerEnv(queue: string): NodeJS.ProcessEnv {
  return { ...process.env, TSQ_LOSS_REDIS_URL: redisUrl, TSQ_CLUSTER_QUEUE: queue, TSQ_CLUSTER_BROKER: cluster!.urlList, NO_COLOR: '1' }
}

async function waitLog(proc: GroupProcess, text: string | RegExp, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  const seen = () => (typeof text === 'string' ? proc.log.includes(text) : text.test(proc.log))
  while (!seen()) {
    if (proc.hasExited) throw new Error(`${what} exited:\n${proc.logTail()}`)
    if (Date.now() > deadline) throw new Error(`${what}: no ${String(text)} within ${timeoutMs} ms:\n${proc.logTail()}`)
    await sleep(100)
  }
}

async function startTsqWorker(name: string, queue: string): Promise<GroupProcess> {
  const proc = new GroupProcess(
    spawn(
      process.execPath,
      [
        BIN,
        'worker',
        '-A',
        APP,
        '-b',
        cluster!.urlList,
        '-n',
        `${name}@cluster`,
        '-P',
        'solo',
        '-c',
        String(TSQ_CONCURRENCY),
        '--prefetch-multiplier',
        String(PREFETCH_MULTIPLIER),
        '-l',
        'INFO',
        '--without-mingle',
        '--without-gossip',
      ],
      {
        cwd: ROOT,
        env: workerEnv(queue),
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ),
    // The whole log: an INFO line per task would push the connection lines out of a short tail.
    FULL_LOG,
  )
  procs.push(proc)
  await waitLog(proc, `${name}@cluster ready.`, 90_000, `tsq worker ${name}`)
  return proc
}

async function startPythonWorker(name: string, queue: string): Promise<GroupProcess> {
  const proc = new GroupProcess(
    spawn(
      PYTHON,
      [
        '-m',
        'celery',
        '-A',
        'cluster_tasks',
        'worker',
        '-P',
        'solo',
        '-c',
        '1',
        '--prefetch-multiplier',
        '1',
        '-Q',
        queue,
        '-n',
        `${name}@cluster`,
        '-l',
        'INFO',
        '--without-mingle',
        '--without-gossip',
        '--without-heartbeat',
      ],
      {
        cwd: PY_DIR,
        env: { ...workerEnv(queue), PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1' },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ),
  )
  procs.push(proc)
  await waitLog(proc, `${name}@cluster ready.`, 90_000, `Python worker ${name}`)
  return proc
}

async function stopWorker(proc: GroupProcess): Promise<void> {
  await proc.stopWith(() => process.kill(proc.pid, 'SIGTERM'), 60_000)
}

/** The masked URL a tsq worker last said it connected to. */
function connectedPort(proc: GroupProcess): number {
  const all = [...proc.log.matchAll(/Connected to amqp:\/\/guest:\*\*@127\.0\.0\.1:(\d+)\/\//g)]
  assert.ok(all.length > 0, `no "Connected to" line:\n${proc.logTail()}`)
  return Number(all.at(-1)![1])
}

/** The node holding the quorum queue's leader, as RabbitMQ reports it. */
async function leaderOf(queue: string, via: RabbitNode): Promise<RabbitNode> {
  const out = await via.ctl(['list_queues', '-q', '--formatter', 'json', 'name', 'type', 'leader'])
  const row = (JSON.parse(out) as Array<{ name: string; type: string; leader: string }>).find((q) => q.name === queue)
  assert.equal(row?.type, 'quorum', `queue ${queue} is not a quorum queue: ${out}`)
  const node = cluster!.nodes.find((n) => n.name === row!.leader)
  assert.ok(node, `leader ${row!.leader} is none of ours`)
  return node
}

/**
 * Tasks sent but not started yet, from the tasks' own records: what is queued or
 * prefetched at that moment. (rabbitmqctl's `messages` for a quorum queue read
 * on a follower said 0 with thousands queued.)
 */
async function notStarted(key: string, sent: number): Promise<number> {
  return sent - (await redis!.scard(`${key}:started`))
}

function quorumTransport(): Promise<Transport> {
  return createTransport(cluster!.urlList, { delayedQueueType: 'quorum' })
}

function quorumDefinition(queue: string) {
  return queueSettings({ task_default_queue_type: 'quorum' }, queue).defined.get(queue)!
}

/** Sends in batches; returns each task's ETA (ms), from the moment its batch went. */
async function sendMany(
  transport: Transport,
  task: string,
  items: Array<{ id: string; args: unknown[]; countdown?: number }>,
  queue: string,
): Promise<number[]> {
  const definition = quorumDefinition(queue)
  const due: number[] = []
  for (let i = 0; i < items.length; i += 200) {
    const batch = items.slice(i, i + 200)
    const at = Date.now()
    for (const it of batch) due.push(at + (it.countdown ?? 0) * 1000)
    await Promise.all(
      batch.map((it) =>
        sendTask(transport, task, {
          id: it.id,
          args: it.args,
          queue,
          resolveQueue: () => definition,
          ...(it.countdown ? { countdown: it.countdown } : {}),
        }),
      ),
    )
  }
  return due
}

async function waitDone(key: string, ids: readonly string[], timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const done = await redis!.scard(`${key}:done`)
    if (done >= ids.length) return
    if (Date.now() > deadline) {
      const doneIds = new Set(await redis!.smembers(`${key}:done`))
      const missing = ids.filter((id) => !doneIds.has(id))
      throw new Error(`${missing.length} of ${ids.length} tasks never finished (e.g. ${missing.slice(0, 5).join(', ')}):\n${what()}`)
    }
    await sleep(250)
  }
}

/** The file's cluster and Redis (once per file), and the scenario's test. */
export function rabbitClusterSuite(scenario: 'failover' | 'eta'): void {
  before(async () => {
    if (skip) return
    // In parallel: the nodes take about a minute to boot on a loaded machine.
    const [c] = await Promise.all([startRabbitCluster(join(dir, 'rabbit'), 3), startRedis()])
    cluster = c
  })

  after(async () => {
    await Promise.all(procs.map((p) => p.stopWith(() => process.kill(-p.pid, 'SIGKILL'), 0)))
    redis?.disconnect()
    await cluster?.stop()
    await redisProc?.stopWith(() => process.kill(redisProc!.pid, 'SIGTERM'), 5_000)
    rmSync(dir, { recursive: true, force: true })
  })

  describe('RabbitMQ cluster with quorum queues (issue 23)', { skip }, () => {
    if (scenario === 'failover')
      it(
        `failover list + quorum queue: ${TASKS} tasks through two tsq workers and a Celery 5.2.6 worker survive the connected node's stop and the queue leader's stop`,
        { timeout: 420_000 },
        async () => {
          const queue = uniqueName('tsq-cluster-q')
          const key = uniqueName('cluster')
          const [first] = cluster!.nodes
          // The queue exists (as a quorum queue) before anyone sends to it.
          const w1 = await startTsqWorker('w1', queue)
          const w2 = await startTsqWorker('w2', queue)
          const py = await startPythonWorker('py1', queue)
          assert.match(
            w1.log,
            /\.> transport: +amqp:\/\/guest:\*\*@127\.0\.0\.1:\d+\/\/;amqp:\/\/guest:\*\*@/,
            'the banner lists the failover URLs, masked',
          )
          assert.doesNotMatch(w1.log, /guest:guest@/, 'no password in the log')
          assert.equal((await leaderOf(queue, first!)).name.length > 0, true)

          const ids = Array.from({ length: TASKS }, (_, i) => `${key}-${i}`)
          const pyIds = ids.slice(0, PY_SENT)
          const tsqIds = ids.slice(PY_SENT)
          // The Python client sends its share with the failover list, as tsq's does.
          const pySend = new GroupProcess(
            spawn(PYTHON, [join(PY_DIR, 'cluster_tasks.py'), 'send', key, String(TASK_MS), ...pyIds], {
              cwd: PY_DIR,
              env: { ...workerEnv(queue), PYTHONPATH: PY_DIR },
              detached: true,
              stdio: ['ignore', 'pipe', 'pipe'],
            }),
          )
          procs.push(pySend)
          // Half of tsq's share now, half just before the second stop, so that both stops find work queued.
          const [firstHalf, secondHalf] = [tsqIds.slice(0, tsqIds.length / 2), tsqIds.slice(tsqIds.length / 2)]
          const client = await quorumTransport()
          after(() => client.close())
          await sendMany(
            client,
            'cluster.work',
            firstHalf.map((id) => ({ id, args: [key, TASK_MS] })),
            queue,
          )
          assert.equal(await pySend.exited, 0, `Python client failed:\n${pySend.logTail()}`)

          // Stop 1: the node both tsq workers are connected to (the list's first, round-robin).
          const port = connectedPort(w1)
          assert.equal(connectedPort(w2), port)
          const connected = cluster!.nodes.find((n) => n.port === port)!
          const survivor = cluster!.nodes.find((n) => n !== connected)!
          const stops: Array<{ node: string; depth: number; at: number }> = []
          stops.push({ node: connected.name, depth: await notStarted(key, PY_SENT + firstHalf.length), at: Date.now() })
          await connected.ctl(['stop_app'])
          for (const [name, w] of [
            ['w1', w1],
            ['w2', w2],
          ] as const) {
            await waitLog(w, /Connection to broker lost[\s\S]*Connected to/, 60_000, `tsq worker ${name} (failover)`)
            assert.notEqual(connectedPort(w), port, `${name} moved to another node`)
          }
          // Stats through any node: the stopped node's URL first in the list.
          const stats = await tsqJson(['inspect', 'stats', '-b', `${connected.url};${survivor.url}`, '-d', 'w1@cluster', '--json'])
          const broker = (JSON.parse(stats) as Record<string, { broker: { port: number; alternates: string[] } }>)['w1@cluster']!.broker
          assert.equal(broker.port, connectedPort(w1), 'inspect stats names the node w1 is connected to')
          assert.equal(broker.alternates.length, 3)
          assert.ok(
            broker.alternates.every((u) => u.includes(':**@')),
            'alternates are masked',
          )
          await connected.ctl(['start_app'])

          // Stop 2: the queue's leader now, on a node other than the one stopped first.
          await sendMany(
            client,
            'cluster.work',
            secondHalf.map((id) => ({ id, args: [key, TASK_MS] })),
            queue,
          )
          const leader = await leaderOf(queue, survivor)
          stops.push({ node: leader.name, depth: await notStarted(key, ids.length), at: Date.now() })
          await leader.ctl(['stop_app'])
          for (const s of stops)
            assert.ok(
              s.depth > 0,
              `tasks were still queued when ${s.node} stopped (${s.depth}); stops ${JSON.stringify(stops)}; done ${await redis!.scard(`${key}:done`)}`,
            )

          await waitDone(key, ids, 300_000, () => `w1:\n${w1.logTail(1500)}\nw2:\n${w2.logTail(1500)}\npy:\n${py.logTail(1500)}`)
          await leader.ctl(['start_app'])
          const runs = await redis!.hgetall(`${key}:runs`)
          const repeated = Object.entries(runs).filter(([, n]) => Number(n) > 1)
          const extra = repeated.reduce((sum, [, n]) => sum + Number(n) - 1, 0)
          // What a worker holds unacked at a stop (its prefetch window) is all the broker can give again.
          const bound = stops.length * (2 * TSQ_CONCURRENCY * PREFETCH_MULTIPLIER + 1)
          process.stdout.write(
            `# ${TASKS} tasks, ${stops.length} stops (queue depth ${stops.map((s) => s.depth).join(', ')}): ${repeated.length} ran twice or more (${extra} extra runs; bound ${bound})\n`,
          )
          assert.ok(extra <= bound, `${extra} repeated runs exceed the in-flight bound ${bound}`)
          assert.equal(Object.keys(runs).length, TASKS)
          for (const [name, w] of [
            ['w1', w1],
            ['w2', w2],
          ] as const)
            assert.ok(!w.hasExited, `${name} is still up`)
          await Promise.all([stopWorker(w1), stopWorker(w2), stopWorker(py)])
        },
      )
    if (scenario === 'eta')
      it(
        `ETA tasks on a quorum queue: ${ETA_TASKS} countdowns over 1-${ETA_SPREAD_S} s wait in the broker's delayed delivery, survive a worker restart, and run at their time`,
        { timeout: 300_000 },
        async () => {
          const queue = uniqueName('tsq-cluster-eta')
          const key = uniqueName('eta')
          const a = await startTsqWorker('ea', queue)
          let b = await startTsqWorker('eb', queue)
          const items = Array.from({ length: ETA_TASKS }, (_, i) => ({
            id: `${key}-${i}`,
            args: [key],
            countdown: 1 + (i * (ETA_SPREAD_S - 1)) / Math.max(1, ETA_TASKS - 1),
          }))
          const client = await quorumTransport()
          let due: number[]
          try {
            due = await sendMany(client, 'cluster.at', items, queue)
          } finally {
            await client.close()
          }
          const dueAt = (i: number) => due[i]!
          // What the workers hold in memory, sampled: only those due within a couple of seconds.
          const samples: Array<{ held: number; dueSoon: number }> = []
          const sample = async () => {
            const out = await tsqJson(['inspect', 'scheduled', '-b', cluster!.urlList, '--json'])
            const held = Object.values(JSON.parse(out) as Record<string, unknown[]>).reduce((n, list) => n + list.length, 0)
            const now = Date.now()
            const dueSoon = items.filter((_, i) => dueAt(i) > now - 2_000 && dueAt(i) < now + (BROKER_QUEUE_HOLD_S + 1) * 1000).length
            samples.push({ held, dueSoon })
          }
          await sleep(8_000)
          await sample()
          // A restart in the middle: eb goes (warm shutdown) and comes back while ea runs on.
          await stopWorker(b)
          b = await startTsqWorker('eb', queue)
          await sample()
          await sleep(10_000)
          await sample()
          await waitDone(
            key,
            items.map((it) => it.id),
            180_000,
            () => `ea:\n${a.logTail(1500)}\neb:\n${b.logTail(1500)}`,
          )
          const late = Object.values(await redis!.hgetall(`${key}:late`))
            .map(Number)
            .sort((x, y) => x - y)
          const within1s = late.filter((ms) => ms <= 1_000).length
          process.stdout.write(
            `# ETA: ${late.length} ran; lateness ms p50=${late[Math.floor(late.length / 2)]} p99=${late[Math.floor(late.length * 0.99)]} max=${late.at(-1)}; ${within1s}/${late.length} within 1 s; held by workers at samples: ${samples.map((s) => `${s.held} (due within ${BROKER_QUEUE_HOLD_S + 1} s: ${s.dueSoon})`).join(', ')}\n`,
          )
          assert.equal(late.length, ETA_TASKS, 'every ETA task ran once (none lost across the restart)')
          assert.ok(late[0]! >= -50, `no task runs before its ETA (earliest ${late[0]} ms)`)
          // The shared machine makes a strict 1 s bound flaky; a task held the whole delay in a worker would be fine too, so memory is the check.
          assert.ok(late.at(-1)! < 10_000, `every task ran near its time (latest ${late.at(-1)} ms late)`)
          for (const s of samples)
            assert.ok(
              s.held <= s.dueSoon + TSQ_CONCURRENCY,
              `workers held ${s.held} ETA tasks while only ${s.dueSoon} were due within seconds: the broker holds the rest`,
            )
          assert.match(a.log, /Global QoS is disabled/, 'a quorum queue consumer uses per-consumer prefetch')
          await Promise.all([stopWorker(a), stopWorker(b)])
        },
      )
  })
}

async function tsqJson(args: string[]): Promise<string> {
  const r = await runTsq(args, { env: { NO_COLOR: '1' }, timeoutMs: 90_000 })
  assert.equal(r.code, 0, `tsq ${args.join(' ')} failed:\n${r.stderr}`)
  return r.stdout
}
