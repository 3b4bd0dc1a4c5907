// tsq-test: slow 2
// tsq through Redis Sentinel (`sentinel://a;sentinel://b`
// with master_name, as kombu and Celery spell it), on a set-up of this file's
// own: a master, a replica and three Sentinels on 127.0.0.1
// (test/interop/helpers/sentinel-cluster.ts), started once and stopped at the end.
//
// - bad input: a sentinel:// broker without master_name, or with a name no
//   Sentinel knows, is one line and a non-zero exit;
// - one failover (`redis-cli -p <sentinel> sentinel failover mymaster`) in
//   the middle of 5,000 tasks through two tsq workers, half of them sent
//   after it by the same client: every task runs and its result is stored,
//   repeats stay within the two workers' in-flight windows, `tsq inspect
//   ping` finds both workers through the Sentinels after it, and Python
//   Celery's AsyncResult (sentinel:// backend,
//   result_backend_transport_options master_name) reads the results;
// - three `tsq beat --scheduler redis --ha lease` (store and broker through
//   the Sentinels) across the same failover: no run sent twice, sends go on
//   after it; a lease taken before the failover and lost on the new master
//   has its fencing token refused there.
// Task runs are counted in a plain Redis beside the set-up
// (TSQ_LOSS_REDIS_URL), which no failover touches.
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { sendTask } from '../../src/client/send-task.js'
import { RedisLease } from '../../src/beat/lease.js'
import { RedisStore } from '../../src/beat/redis-store.js'
import { intervalJson } from '../../src/beat/entry.js'
import { createTransport, type Transport } from '../../src/transport/index.js'
import { uniqueName, waitFor } from '../helpers/brokers.js'
import { BIN, ROOT } from '../helpers/cli.js'
import { GroupProcess, sleep } from '../helpers/process-group.js'
import { MASTER_NAME, startSentinelCluster, type SentinelCluster } from './helpers/sentinel-cluster.js'

const run = promisify(execFile)
const APP = 'test/fixtures/tasks/sentinel-tasks.js'
const PY_DIR = join(ROOT, 'test', 'interop', 'py')
const TASKS = 5_000
const WORKERS = 2
const CONCURRENCY = 8
/** tsq's default prefetch multiplier (4) times the concurrency: what one worker holds unacked at most. */
const WINDOW = 4 * CONCURRENCY
const SENTINEL = { masterName: MASTER_NAME }

async function setupSkip(): Promise<string | false> {
  try {
    await run('redis-server', ['--version'])
    await run('redis-cli', ['--version'])
  } catch {
    const reason = 'redis-server / redis-cli not installed; skipping the Sentinel tests'
    if (process.env.CI) throw new Error(`CI requires them: ${reason}`)
    return reason
  }
  return false
}
const skip = await setupSkip()

let cluster: SentinelCluster | undefined
let dir = ''
const procs: GroupProcess[] = []
const transports: Transport[] = []

function sideUrl(): string {
  return `redis://127.0.0.1:${cluster!.sidePort}/0`
}

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    TSQ_SENTINEL_URL: cluster!.url(0),
    TSQ_LOSS_REDIS_URL: sideUrl(),
    TSQ_BROKER_URL: '',
    CELERY_BROKER_URL: '',
    TSQ_RESULT_BACKEND: '',
    CELERY_RESULT_BACKEND: '',
    ...extra,
  }
}

function tsq(args: string[], extraEnv: NodeJS.ProcessEnv = {}): GroupProcess {
  const proc = new GroupProcess(
    spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: env(extraEnv), detached: true, stdio: ['ignore', 'pipe', 'pipe'] }),
  )
  procs.push(proc)
  return proc
}

async function tsqOnce(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd: ROOT, env: env(), timeout: 60_000 })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string }
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

async function sentinelTransport(): Promise<Transport> {
  const t = await createTransport(cluster!.url(0), { sentinel: SENTINEL })
  transports.push(t)
  await t.connect()
  return t
}

/** A client of the master through the Sentinels, as tsq's own are made. */
function masterClient(db = 0): Redis {
  const client = new Redis({
    sentinels: cluster!.sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
    name: MASTER_NAME,
    db,
    failoverDetector: true,
    sentinelReconnectStrategy: () => null,
    maxRetriesPerRequest: 20,
  })
  client.on('error', () => undefined)
  return client
}

describe('Redis Sentinel (sentinel://, master_name)', { skip }, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tsq-sentinel-'))
    cluster = await startSentinelCluster(dir)
  })

  after(async () => {
    await Promise.all(procs.map((p) => p.stopWith(() => process.kill(-p.pid, 'SIGKILL'), 1_000)))
    for (const t of transports) await Promise.race([t.close().catch(() => undefined), sleep(5_000)])
    await cluster?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('[-b sentinel://] without master_name, or with one no Sentinel knows: one line, non-zero exit', async () => {
    const missing = await tsqOnce(['inspect', 'ping', '-b', cluster!.url(0), '-t', '1'])
    assert.equal(missing.code, 64, `exit code, stderr: ${missing.stderr}`)
    assert.match(missing.stderr.trim(), /^[^\n]*broker_transport_options\.master_name[^\n]*$/)
    // A JSON settings module, as `--config` takes one: the name is wrong.
    const config = join(dir, 'unknown-master.json')
    writeFileSync(config, JSON.stringify({ broker_transport_options: { master_name: 'no-such-master' } }))
    const unknown = await tsqOnce(['--config', config, 'inspect', 'ping', '-b', cluster!.url(0), '-t', '1'])
    assert.equal(unknown.code, 69, `exit code, stderr: ${unknown.stderr}`)
    assert.match(unknown.stderr.trim(), /^[^\n]*knows a master named 'no-such-master'[^\n]*$/)
  })

  it(
    `[sentinel failover] ${TASKS} tasks through ${WORKERS} workers and three beats (--scheduler redis --ha lease) across \`sentinel failover\``,
    { timeout: 300_000 },
    async () => {
      const queue = uniqueName('tsq-sentinel-q')
      const beatQueue = uniqueName('tsq-sbeat-q')
      const key = uniqueName('tsq-sentinel-key')
      const prefix = `${uniqueName('tsq-sbeat')}:`
      const fencePrefix = `${uniqueName('tsq-sfence')}:`
      const counts = new Redis(sideUrl())
      const master = masterClient(0)
      // Beat's store through the Sentinels, as `tsq beat` opens it.
      const store = await RedisStore.open({ url: cluster!.url(0), sentinel: SENTINEL, keyPrefix: prefix })
      const fenceStore = await RedisStore.open({ url: cluster!.url(0), sentinel: SENTINEL, keyPrefix: fencePrefix })
      try {
        const workers = Array.from({ length: WORKERS }, (_, i) => {
          const node = `${uniqueName(`sentinel${i}`)}@testhost`
          const proc = tsq(
            [
              'worker',
              '-A',
              APP,
              '-n',
              node,
              '-P',
              'solo',
              '-c',
              String(CONCURRENCY),
              '-Q',
              queue,
              '-l',
              'INFO',
              '--without-mingle',
              '--without-gossip',
            ],
            {
              // Short, so that an ack the failover refused comes back soon (and runs again, which the bound below allows).
              TSQ_SENTINEL_VISIBILITY: '20',
            },
          )
          return { node, proc }
        })
        await store.save(
          {
            name: 'tick',
            task: 'sentinel.work',
            args: ['beat', 0],
            kwargs: {},
            options: { queue: beatQueue },
            schedule: intervalJson(1),
            enabled: true,
          },
          { meta: { lastRunAt: Date.now(), totalRunCount: 0 } },
        )
        await fenceStore.save(
          {
            name: 'fenced',
            task: 'sentinel.work',
            args: ['fence', 0],
            kwargs: {},
            options: { queue: beatQueue },
            schedule: intervalJson(3600),
            enabled: true,
          },
          { meta: { lastRunAt: Date.now(), totalRunCount: 0 } },
        )
        const client = await sentinelTransport()
        await client.declareQueue({ name: beatQueue, durable: true, exclusive: false, autoDelete: false })
        const received: Array<{ id: string; at: number }> = []
        await client.consume(beatQueue, async (d) => void received.push({ id: String(d.properties.headers.id), at: Date.now() }), {
          noAck: true,
        })
        const beats = [0, 1, 2].map(() =>
          tsq([
            'beat',
            '-A',
            APP,
            '-l',
            'DEBUG',
            '-q',
            '--scheduler',
            'redis',
            '--key-prefix',
            prefix,
            '--ha',
            'lease',
            '--lock-timeout',
            '3',
            '--max-interval',
            '1',
          ]),
        )

        for (const w of workers)
          await waitFor(() => w.proc.log.includes(`${w.node} ready.`) || w.proc.hasExited, { timeoutMs: 60_000, what: `${w.node} ready` })
        for (const w of workers) assert.ok(!w.proc.hasExited, `worker exited:\n${w.proc.logTail()}`)
        assert.match(workers[0]!.proc.log, /transport:\s+sentinel:\/\/127\.0\.0\.1:\d+\/0;sentinel:\/\//, 'the banner lists the Sentinels')
        await waitFor(() => received.length >= 3, { timeoutMs: 60_000, what: `beat's first sends:\n${beats[0]!.logTail()}` })

        const ids: string[] = []
        const send = async (n: number) => {
          for (let i = 0; i < n; i++) {
            const id = `${key}-${ids.length}`
            ids.push(id)
            await sendTask(client, 'sentinel.work', { id, args: [key, 2], queue })
          }
        }
        await send(TASKS / 2)
        // A leader of another prefix, taken before the failover: deposed by it below.
        const deposed = new RedisLease(fenceStore.redis, fenceStore.lockKey, 2_000)
        assert.equal(await deposed.refresh(), 'acquired')
        const deposedFence = deposed.held!
        await waitFor(async () => (await counts.hlen(`${key}:runs`)) >= TASKS / 5, { timeoutMs: 120_000, what: 'a fifth of the tasks run' })

        const switchedAt = Date.now()
        const { from, to } = await cluster!.failover()
        assert.notEqual(from, to)
        // The same client, after the switch: it finds the new master.
        await send(TASKS / 2)

        await waitFor(async () => (await counts.hlen(`${key}:runs`)) >= TASKS, {
          timeoutMs: 180_000,
          intervalMs: 500,
          what: `all ${TASKS} tasks run`,
        })
        // Every result, on the master the Sentinels name now.
        const missing = async () => {
          const lost: string[] = []
          for (let i = 0; i < ids.length; i += 500) {
            const chunk = ids.slice(i, i + 500)
            const values = await master.mget(...chunk.map((id) => `celery-task-meta-${id}`))
            values.forEach((v, j) => {
              if (v === null || JSON.parse(v).status !== 'SUCCESS') lost.push(chunk[j]!)
            })
          }
          return lost
        }
        await waitFor(async () => (await missing()).length === 0, { timeoutMs: 60_000, intervalMs: 1_000, what: 'every result stored' })
        const runs = Object.values(await counts.hgetall(`${key}:runs`)).map(Number)
        const repeats = runs.reduce((a, b) => a + b, 0) - TASKS
        assert.equal(runs.length, TASKS)
        assert.ok(repeats <= WORKERS * WINDOW, `${repeats} repeats exceed the workers' in-flight bound ${WORKERS * WINDOW}`)
        process.stderr.write(`sentinel failover ${from} -> ${to}: ${TASKS} tasks, ${repeats} repeats (bound ${WORKERS * WINDOW})\n`)

        const ping = await tsqOnce(['inspect', 'ping', '-A', APP, '-t', '5', '--json'])
        assert.equal(ping.code, 0, ping.stderr)
        const replies = JSON.parse(ping.stdout) as Record<string, unknown>
        for (const w of workers) assert.ok(w.node in replies, `${w.node} answers inspect ping after the failover: ${ping.stdout}`)
        for (const w of workers) assert.ok(!w.proc.hasExited, `worker still up:\n${w.proc.logTail()}`)

        // Python Celery 5.2.6 reads results written through the Sentinels, before and after the failover.
        const sample = [...ids.slice(0, 40), ...ids.slice(-40)]
        const { stdout } = await run('/usr/bin/python3', [join(PY_DIR, 'sentinel_results.py'), cluster!.url(0), ...sample], {
          cwd: PY_DIR,
          timeout: 120_000,
        })
        const seen = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, [string, unknown]>
        for (const id of sample) assert.deepEqual(seen[id], ['SUCCESS', id], `AsyncResult(${id})`)

        // Beat: no run sent twice, and the sends went on after the switch.
        await waitFor(() => received.filter((r) => r.at > switchedAt).length >= 5, {
          timeoutMs: 60_000,
          what: 'beat sends after the failover',
        })
        await Promise.all(beats.map((b) => b.stopWith(() => process.kill(b.pid, 'SIGTERM'), 10_000)))
        await sleep(500)
        const beatRuns = beats
          .flatMap((b) => [...b.log.matchAll(/beat: tick run (\d+) sent as/g)].map((m) => Number(m[1])))
          .sort((a, b) => a - b)
        const dup = beatRuns.filter((n, i) => i > 0 && beatRuns[i - 1] === n)
        const around = (n: number) =>
          beats
            .map((b, i) =>
              b.log
                .split('\n')
                .filter((l) => /lease|fenced|error|warn/i.test(l) || l.includes(` run ${n} `))
                .map((l) => `beat${i}: ${l}`)
                .join('\n'),
            )
            .join('\n')
        assert.deepEqual(
          dup,
          [],
          `runs sent twice: ${dup.join(', ')} (failover at ${new Date(switchedAt).toISOString()})\n${dup.map(around).join('\n')}`,
        )
        assert.equal(new Set(received.map((r) => r.id)).size, received.length, 'no beat message twice')
        assert.equal(received.length, beatRuns.length, 'every send the beats logged reached the queue, and nothing else')

        // The deposed holder: its lease ran out on the new master, another takes it, and the old token is refused there.
        const successor = new RedisLease(fenceStore.redis, fenceStore.lockKey, 10_000)
        assert.equal(await successor.refresh(), 'acquired')
        assert.ok(successor.fence! > Number(deposedFence.token.split(':').pop()), "the fence counter went on from the old master's")
        const fencedRun = { name: 'fenced', expectedCount: 0, ranAt: Date.now(), nextDueAt: Date.now() + 3_600_000 }
        assert.deepEqual(await fenceStore.reserveAll([fencedRun], deposedFence), ['fenced'])
        assert.deepEqual(await fenceStore.reserveAll([fencedRun], successor.held!), ['ok'])
        assert.equal(await deposed.refresh(), 'lost')
        await successor.release()
        for (const q of [queue, beatQueue]) await client.deleteQueue(q).catch(() => undefined)
      } finally {
        await counts.del(`${key}:runs`).catch(() => undefined)
        counts.disconnect()
        master.disconnect()
        for (const s of [store, fenceStore]) {
          const keys = await s.redis.keys(`${s.prefix}*`).catch(() => [] as string[])
          if (keys.length) await s.redis.del(...keys).catch(() => undefined)
          await s.close()
        }
      }
    },
  )
})
