// bench/beat-scale: N entries (default 100,000) in the Redis store.
//   idle tick   : one tick when nothing is due (lease renewal + zset peek)
//   burst       : all N due at once: sends per second through the full tick
//                 (load, one fenced reservation script per 500 due runs,
//                 encode, publishes overlapped 64 at a time)
//   cpu/send    : during the burst, CPU (user+sys) per send of the sending
//                 process: less disturbed than sends/s when other work shares
//                 the machine (Redis's own CPU is left out: other clients of
//                 the same server would count in it)
//   memory      : beat's RSS after the burst
// The peer is the same store driven by the plain Redis commands RedBeat issues
// per due entry (pipelined HGET definition/meta, MULTI HSET meta + ZADD, and a
// LPUSH of a same-sized message), i.e. RedBeat's ceiling without Python.
// Knobs: BEAT_SCALE_N, TSQ_BENCH_REDIS_URL. Cleans its own keys.
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { encodeDefinition, encodeMeta, intervalJson } from '../src/beat/entry.js'
import { RedisLease } from '../src/beat/lease.js'
import { RedisStore } from '../src/beat/redis-store.js'
import { Beat } from '../src/beat/scheduler.js'
import { createTransport } from '../src/transport/index.js'

const N = Number(process.env.BEAT_SCALE_N ?? 100_000)
const URL = process.env.TSQ_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/0'
const quiet = { debug() {}, info() {}, warning() {}, error() {} }

async function seed(redis: Redis, prefix: string, queue: string, dueAt: number): Promise<void> {
  for (let i = 0; i < N; i += 5000) {
    const pipe = redis.pipeline()
    for (let j = i; j < Math.min(N, i + 5000); j++) {
      const key = `${prefix}e${j}`
      pipe.hset(
        key,
        'definition',
        encodeDefinition({
          name: `e${j}`,
          task: 'proj.add',
          args: [j, 1],
          kwargs: {},
          options: { queue },
          schedule: intervalJson(3600),
          enabled: true,
        }),
      )
      pipe.hset(key, 'meta', encodeMeta({ lastRunAt: dueAt - 3600_000, totalRunCount: 0 }))
      pipe.zadd(`${prefix}:schedule`, Math.floor(dueAt / 1000), key)
    }
    await pipe.exec()
  }
}

async function clean(redis: Redis, prefix: string, queue: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 5000)
    cursor = next
    if (keys.length) await redis.del(...keys)
  } while (cursor !== '0')
  await redis.del(queue)
}

interface Burst {
  sendsPerSec: number
  /** Microseconds of the sending process's CPU per send. */
  cpuUs: number
}

/** Times `run` (which sends N) by the clock and by CPU. */
async function burst(run: () => Promise<void>): Promise<Burst> {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await run()
  const elapsed = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  return { sendsPerSec: N / elapsed, cpuUs: (cpu.user + cpu.system) / N }
}

async function tsqFigures(redis: Redis): Promise<Burst & { idleMs: number; rssMb: number }> {
  const prefix = `bench-beat-${randomUUID().slice(0, 8)}:`
  const queue = `bench-beat-q-${randomUUID().slice(0, 8)}`
  await seed(redis, prefix, queue, Date.now() + 3600_000)
  const store = await RedisStore.open({ url: URL, keyPrefix: prefix, batch: 1000 })
  const transport = await createTransport(URL)
  await transport.connect()
  const lease = new RedisLease(store.redis, store.lockKey, 10_000)
  let clock = Date.now()
  const beat = new Beat({ store, transport, tz: 'UTC', maxInterval: 300, ha: 'lease', lease, log: quiet, now: () => clock })
  try {
    await beat.tick()
    const t0 = performance.now()
    for (let i = 0; i < 20; i++) await beat.tick()
    const idleMs = (performance.now() - t0) / 20
    clock = Date.now() + 3600_000 + 1000
    const figures = await burst(async () => {
      while (beat.sent < N) await beat.tick()
    })
    return { idleMs, ...figures, rssMb: process.memoryUsage().rss / 2 ** 20 }
  } finally {
    await lease.release()
    await transport.close()
    await store.close()
    await clean(redis, prefix, queue)
  }
}

async function peerFigures(redis: Redis): Promise<Burst & { idleMs: number }> {
  const prefix = `bench-beat-${randomUUID().slice(0, 8)}:`
  const queue = `bench-beat-q-${randomUUID().slice(0, 8)}`
  const now = Date.now()
  await seed(redis, prefix, queue, now)
  const sched = `${prefix}:schedule`
  const lock = `${prefix}:lock`
  await redis.set(lock, 'token', 'PX', 10_000)
  const extend = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
  try {
    const t0 = performance.now()
    for (let i = 0; i < 20; i++) {
      await redis.eval(extend, 1, lock, 'token', 10_000)
      await redis.multi().zrangebyscore(sched, 0, 0).zrangebyscore(sched, '(0', '+inf', 'LIMIT', 0, 1).exec()
    }
    const idleMs = (performance.now() - t0) / 20
    const body = Buffer.alloc(900, 'x').toString()
    let sent = 0
    const figures = await burst(async () => {
      while (sent < N) {
        await redis.eval(extend, 1, lock, 'token', 10_000)
        const keys = await redis.zrangebyscore(sched, 0, Math.floor(now / 1000), 'LIMIT', 0, 1000)
        const load = redis.pipeline()
        for (const k of keys) load.hget(k, 'definition').hget(k, 'meta')
        await load.exec()
        const write = redis.pipeline()
        for (const k of keys) {
          write.lpush(queue, body)
          // RedBeat's per-entry MULTI, inside the pipeline as redis-py sends it.
          write
            .call('MULTI')
            .hset(k, 'meta', encodeMeta({ lastRunAt: now, totalRunCount: 1 }))
            .zadd(sched, Math.floor(now / 1000) + 3600, k)
            .call('EXEC')
        }
        await write.exec()
        sent += keys.length
      }
    })
    return { idleMs, ...figures }
  } finally {
    await clean(redis, prefix, queue)
  }
}

const redis = new Redis(URL)
try {
  const tsq = await tsqFigures(redis)
  const peer = await peerFigures(redis)
  const line = (name: string, a: number, b: number | null, unit: string) =>
    console.log(
      `${name.padEnd(22)} tsq=${a.toFixed(1)}${unit}  peer=${b === null ? '-' : `${b.toFixed(1)}${unit}`}${b ? `  ratio=${(a / b).toFixed(2)}` : ''}`,
    )
  console.log(`beat-scale: ${N} entries in the Redis store (${URL})`)
  line('idle tick', tsq.idleMs, peer.idleMs, 'ms')
  line('burst sends/s', tsq.sendsPerSec, peer.sendsPerSec, '/s')
  line('burst cpu/send', tsq.cpuUs, peer.cpuUs, 'us')
  line('beat rss', tsq.rssMb, null, 'MB')
} finally {
  await redis.quit()
}
