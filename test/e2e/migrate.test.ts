// `tsq migrate` (issue 26 item 3) side by side with Python Celery 5.2.6:
// 10,000 tasks sent by Celery to RabbitMQ (every 10th with a priority, every
// 50th with an ETA) moved by tsq to Redis, where a Python worker runs every
// one of them exactly once; and a migrate killed with -9 half-way, then run
// again, loses none (at most the messages in flight arrive twice).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import amqplib from '../../src/transport/amqp/amqplib.js'
import { createApp } from '../../src/index.js'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { BIN, ROOT, runTsq, tempTsqHome } from '../helpers/cli.js'
import { GroupProcess, sleep } from '../helpers/process-group.js'
import { PY_DIR, PYTHON, run } from '../interop/helpers/python-worker.js'

const REDIS = REDIS_URL.replace(/\/0$/, '/12')
const skip = (await brokerSkipReason('amqp')) || (await brokerSkipReason('redis'))
const home = tempTsqHome()
const N = 10_000
/** The migrate's window (src/admin/migrate.ts): the most that can arrive twice after a kill. */
const WINDOW = 512
const amqpQueues: string[] = []
const redisQueues: string[] = []

/** Every task id waiting in a kombu Redis queue, priority sub-lists included. */
async function redisQueueIds(queue: string): Promise<string[]> {
  const redis = new Redis(REDIS)
  try {
    const ids: string[] = []
    for (const key of [queue, ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((step) => `${queue}\x06\x16${step}`)]) {
      for (const raw of await redis.lrange(key, 0, -1)) ids.push((JSON.parse(raw) as { headers: { id: string } }).headers.id)
    }
    return ids
  } finally {
    redis.disconnect()
  }
}

async function amqpDepth(queue: string): Promise<number> {
  const conn = await amqplib.connect(AMQP_URL)
  try {
    const ch = await conn.createChannel()
    return (await ch.checkQueue(queue)).messageCount
  } finally {
    await conn.close()
  }
}

after(async () => {
  const conn = await amqplib.connect(AMQP_URL).catch(() => null)
  if (conn) {
    const ch = await conn.createChannel()
    for (const q of amqpQueues) await ch.deleteQueue(q).catch(() => undefined)
    await conn.close().catch(() => undefined)
  }
  const redis = new Redis(REDIS)
  for (const q of redisQueues) await redis.del(q, ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((s) => `${q}\x06\x16${s}`), `_kombu.binding.${q}`)
  redis.disconnect()
})

describe('tsq migrate (issue 26 item 3)', { skip }, () => {
  it('moves 10,000 tasks Celery sent to RabbitMQ onto Redis, where a Python worker runs each once', async () => {
    const queue = uniqueName('cli-migrate')
    amqpQueues.push(queue)
    redisQueues.push(queue)
    const pyEnv = {
      ...process.env,
      PYTHONPATH: PY_DIR,
      PYTHONDONTWRITEBYTECODE: '1',
      TSQ_INTEROP_QUEUE: queue,
      TSQ_INTEROP_BACKEND: 'disabled://',
    }
    const sent = await run(PYTHON, ['migrate_send.py', String(N)], {
      cwd: PY_DIR,
      env: { ...pyEnv, TSQ_INTEROP_BROKER: AMQP_URL },
      timeoutMs: 180_000,
    })
    assert.equal(sent.code, 0, sent.stderr)
    const ids = JSON.parse(sent.stdout) as string[]
    assert.equal(ids.length, N)

    const moved = await runTsq(['migrate', AMQP_URL, REDIS, '-a', '-t', '10', '-Q', queue], { timeoutMs: 180_000, env: { TSQ_HOME: home } })
    assert.equal(moved.code, 0, moved.stderr)
    const lines = moved.stdout.trim().split('\n')
    assert.equal(lines.length, N)
    assert.match(lines.at(-1)!, new RegExp(`^Migrating task ${N}/${N}: proj\\.add\\[[0-9a-f-]{36}\\]$`))
    assert.deepEqual(new Set(lines.map((l) => /\[(.+)\]$/.exec(l)![1])), new Set(ids))
    assert.equal(await amqpDepth(queue), 0)
    const onRedis = await redisQueueIds(queue)
    assert.equal(onRedis.length, N)
    // Priority 5 lands in kombu's priority sub-list 3 (kombu's steps 0, 3, 6, 9).
    const redis = new Redis(REDIS)
    assert.equal(await redis.llen(`${queue}\x06\x163`), N / 10)
    redis.disconnect()

    const logfile = join(home, 'py-migrated.log')
    const worker = new GroupProcess(
      spawn(
        PYTHON,
        [
          '-m',
          'celery',
          '-A',
          'tasks',
          'worker',
          '-P',
          'threads',
          '-c',
          '8',
          '-Q',
          queue,
          '-n',
          `${queue}@%h`,
          '--without-gossip',
          '--without-mingle',
          '-l',
          'INFO',
          '--logfile',
          logfile,
        ],
        { cwd: PY_DIR, env: { ...pyEnv, TSQ_INTEROP_BROKER: REDIS }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      ),
    )
    try {
      const deadline = Date.now() + 240_000
      const succeeded = () => {
        let text: string
        try {
          text = readFileSync(logfile, 'utf8')
        } catch {
          return []
        }
        return [...text.matchAll(/Task proj\.add\[([^\]]+)\] succeeded/g)].map((m) => m[1]!)
      }
      while (succeeded().length < N) {
        if (worker.hasExited) throw new Error(`Python worker exited:\n${worker.logTail()}`)
        if (Date.now() > deadline) throw new Error(`Python worker ran ${succeeded().length} of ${N} in time`)
        await sleep(1000)
      }
      // A moment more, so a second run of any task would show.
      await sleep(2000)
      const ran = succeeded()
      assert.equal(ran.length, N)
      assert.deepEqual(new Set(ran), new Set(ids))
    } finally {
      await worker.stopWith(() => process.kill(-worker.pid, 'SIGTERM'), 15_000)
    }
  })

  it('a migrate killed with -9 half-way, then run again, loses none', async () => {
    const queue = uniqueName('cli-migrate-kill')
    amqpQueues.push(queue)
    redisQueues.push(queue)
    const app = createApp({ name: 'proj', broker: AMQP_URL })
    const ids: string[] = []
    try {
      for (let i = 0; i < N; i += 500)
        ids.push(
          ...(await Promise.all(Array.from({ length: 500 }, (_, j) => app.sendTask('proj.add', [i + j, 1], {}, { queue })))).map(
            (r) => r.id,
          ),
        )
    } finally {
      await app.close()
    }
    const child = new GroupProcess(
      spawn(process.execPath, [BIN, 'migrate', AMQP_URL, REDIS, '-a', '-t', '10', '-Q', queue], {
        cwd: ROOT,
        env: { ...process.env, TSQ_HOME: home },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      }),
    )
    const deadline = Date.now() + 120_000
    // The kept log is bounded (GroupProcess): the count is read from its last line.
    const count = () => Number([...child.logTail(400).matchAll(/Migrating task (\d+)\//g)].at(-1)?.[1] ?? 0)
    while (count() < N / 3) {
      if (child.hasExited) throw new Error(`migrate ended before the kill:\n${child.logTail()}`)
      if (Date.now() > deadline) throw new Error(`migrate too slow to kill half-way:\n${child.logTail()}`)
      await sleep(20)
    }
    await child.stopWith(() => process.kill(-child.pid, 'SIGKILL'), 10_000)
    const left = await amqpDepth(queue)
    assert.ok(left > 0 && left < N, `the kill came half-way (${left} left on the source)`)

    const again = await runTsq(['migrate', AMQP_URL, REDIS, '-a', '-t', '10', '-Q', queue, '--json'], {
      timeoutMs: 180_000,
      env: { TSQ_HOME: home },
    })
    assert.equal(again.code, 0, again.stderr)
    assert.equal(JSON.parse(again.stdout).migrated, left)
    assert.equal(await amqpDepth(queue), 0)
    const onRedis = await redisQueueIds(queue)
    assert.deepEqual(new Set(onRedis), new Set(ids), 'every task is on the destination')
    assert.ok(onRedis.length - N <= WINDOW, `${onRedis.length - N} arrived twice: at most the window in flight`)
  })

  it('bad input: an unknown scheme is one line and exit 64', async () => {
    const r = await runTsq(['migrate', 'nope://x', REDIS])
    assert.equal(r.code, 64)
    assert.equal(r.stderr.trim().split('\n').length, 1)
  })
})

describe('tsq migrate: a source queue that is not there', () => {
  it('file:// to file://: one line naming the queue and the broker, exit 1 (the broker refused, as every 404)', async () => {
    const r = await runTsq(['migrate', `file://${join(home, 'src-broker')}`, `file://${join(home, 'dst-broker')}`, '-Q', 'no-such-queue'], {
      env: { TSQ_HOME: home },
    })
    assert.equal(r.code, 1, r.stderr)
    assert.equal(r.stderr, `Error: no queue 'no-such-queue' on file://${join(home, 'src-broker')}\n`)
  })
})
