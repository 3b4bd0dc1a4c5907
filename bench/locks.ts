// bench/locks: acquisitions+releases per second of the task-lock stores, one key
// (every acquisition waits for the release before it) and many keys (16 in flight),
// beside the raw commands from the same run: Redis SET NX PX + DEL on one
// connection, for amqp:// (the exclusive-queue store) a raw exclusive queue
// declare + delete, and for file:// an O_EXCL create + unlink. In-process on
// purpose: this measures the stores, not a worker. "per task" is what a lock
// adds to one task's run in a pool slot (the slot's own acquireTaskLock, key
// hashed, lock taken, then let go as the slot does), in ms, one task after
// another, each beside one raw pair of the peer's commands (same loop, turn
// about, so both see the same load).
//   node --import tsx bench/locks.ts [--n 2000] [--redis redis://127.0.0.1:6379/9] [--amqp amqp://guest:guest@127.0.0.1:5672//] [--json]
import { mkdtempSync, rmSync } from 'node:fs'
import { open, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import amqp from '../src/transport/amqp/amqplib.js'
import { acquireTaskLock, closeLockStores, type LockStore } from '../src/locks/index.js'
import { AmqpLockStore } from '../src/locks/amqp-store.js'
import { FileLockStore } from '../src/locks/file-store.js'
import { RedisLockStore } from '../src/locks/redis-store.js'

const arg = (name: string, dflt: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at > 0 ? process.argv[at + 1]! : dflt
}
const N = Number(arg('n', '2000'))
const REDIS = arg('redis', 'redis://127.0.0.1:6379/9')
const AMQP = arg('amqp', 'amqp://guest:guest@127.0.0.1:5672//')
const IN_FLIGHT = 16
const who = { node: 'bench@h', pid: process.pid, task: 'bench.locks', taskId: null }

/** Runs `op(i)` for i < N with `inFlight` at once; ops per second. */
async function rate(inFlight: number, op: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < N) await op(next++)
    }),
  )
  return N / ((performance.now() - t0) / 1000)
}

async function storeOp(store: LockStore, id: string): Promise<void> {
  const got = await store.acquire(id, 10_000, who)
  if (!got.acquired) throw new Error(`bench: ${id} was held`)
  await store.release(got.record)
}

const figures: Array<{ name: string; tsq: number; peer: number; peerLabel: string }> = []
const perTask: Array<{ store: string; ms: number; peerMs: number; peerLabel: string }> = []

/**
 * ms a lock adds to one task: the worker's acquireTaskLock (key, store) and
 * letGo (what LockedRun waits for), n in a row; each beside one `peer(i)`.
 */
async function perTaskCost(
  store: string,
  url: string,
  resultBackend: string | null,
  peerLabel: string,
  peer: (i: number) => Promise<unknown>,
): Promise<void> {
  const request = (i: number) => ({
    task: 'bench.noop',
    fn: (n: number) => n,
    options: { key: (n: number) => n % 10, timeout: 60 },
    args: [i],
    kwargs: {},
    taskId: `t${i}`,
    node: 'bench@h',
    settings: { lockUrl: url, brokerUrl: url, resultBackend },
  })
  const one = async (i: number) => {
    const got = await acquireTaskLock(request(i))
    if (got.kind !== 'held') throw new Error(`bench: ${got.kind}`)
    await got.held.letGo()
  }
  await one(0)
  await peer(0)
  const n = Math.min(N, 1000)
  let lockMs = 0
  let peerMs = 0
  for (let i = 0; i < n; i++) {
    let t0 = performance.now()
    await one(i)
    lockMs += performance.now() - t0
    t0 = performance.now()
    await peer(i)
    peerMs += performance.now() - t0
  }
  perTask.push({ store, ms: lockMs / n, peerMs: peerMs / n, peerLabel })
}
const run = `locks-bench-${process.pid}`

const redis = new Redis(REDIS)
const redisStore = new RedisLockStore(REDIS)
const rawRedis = (key: string) => redis.set(key, '1', 'PX', 10_000, 'NX').then(() => redis.del(key))
// Warm-up: connections open and scripts loaded before the clock runs.
await storeOp(redisStore, `${run}-warm`)
await rawRedis(`${run}-warm`)
figures.push({
  name: 'redis one key',
  tsq: await rate(1, () => storeOp(redisStore, `${run}-one`)),
  peer: await rate(1, () => rawRedis(`${run}-raw-one`)),
  peerLabel: 'SET NX PX + DEL',
})
figures.push({
  name: `redis many keys (${IN_FLIGHT} in flight)`,
  tsq: await rate(IN_FLIGHT, (i) => storeOp(redisStore, `${run}-k${i}`)),
  peer: await rate(IN_FLIGHT, (i) => rawRedis(`${run}-raw-k${i}`)),
  peerLabel: 'SET NX PX + DEL',
})
await redisStore.close()
await perTaskCost('redis', REDIS, null, 'SET NX PX + DEL', (i) => rawRedis(`${run}-raw-task${i % 10}`))
await closeLockStores()
// The fencing counters and holder sets a run leaves behind.
for (const pattern of [`tsq:lock-token:${run}-*`, `tsq:lock-holder:bench@h:${process.pid}`]) {
  const keys = await redis.keys(pattern)
  while (keys.length) await redis.del(...keys.splice(0, 500))
}
redis.disconnect()

// RabbitMQ: the exclusive-queue store beside a raw exclusive declare + delete on one channel.
try {
  const conn = await amqp.connect(AMQP)
  const ch = await conn.createChannel()
  const rawAmqp = async (name: string) => {
    await ch.assertQueue(name, { exclusive: true, durable: false, autoDelete: false })
    await ch.deleteQueue(name)
  }
  const amqpStore = new AmqpLockStore(AMQP)
  await storeOp(amqpStore, `${run}-warm`)
  figures.push({
    name: 'amqp one key',
    tsq: await rate(1, () => storeOp(amqpStore, `${run}-one`)),
    peer: await rate(1, () => rawAmqp(`${run}-raw-one`)),
    peerLabel: 'exclusive queue.declare + queue.delete',
  })
  figures.push({
    name: `amqp many keys (${IN_FLIGHT} in flight)`,
    tsq: await rate(IN_FLIGHT, (i) => storeOp(amqpStore, `${run}-k${i}`)),
    peer: await rate(IN_FLIGHT, (i) => rawAmqp(`${run}-raw-k${i}`)),
    peerLabel: 'exclusive queue.declare + queue.delete',
  })
  await amqpStore.close()
  await perTaskCost('amqp (tokens from Redis)', AMQP, REDIS, 'exclusive queue.declare + queue.delete', (i) =>
    rawAmqp(`${run}-raw-task${i % 10}`),
  )
  await closeLockStores()
  await conn.close()
} catch (error) {
  console.error(`bench: RabbitMQ at ${AMQP.replace(/\/\/[^@/]*@/, '//***@')} skipped: ${(error as Error).message}`)
}

const dir = mkdtempSync(join(tmpdir(), 'tsq-bench-locks-'))
const fileStore = new FileLockStore(`file://${dir}`)
const rawFile = async (name: string) => {
  const handle = await open(join(dir, `${name}.raw`), 'wx')
  await handle.close()
  await unlink(join(dir, `${name}.raw`))
}
await storeOp(fileStore, 'warm')
figures.push({
  name: 'file one key',
  tsq: await rate(1, () => storeOp(fileStore, 'one')),
  peer: await rate(1, () => rawFile('one')),
  peerLabel: 'open(wx) + unlink',
})
figures.push({
  name: `file many keys (${IN_FLIGHT} in flight)`,
  tsq: await rate(IN_FLIGHT, (i) => storeOp(fileStore, `k${i}`)),
  peer: await rate(IN_FLIGHT, (i) => rawFile(`k${i}`)),
  peerLabel: 'open(wx) + unlink',
})
await perTaskCost('file', `file://${dir}`, null, 'open(wx) + unlink', (i) => rawFile(`task${i % 10}`))
rmSync(dir, { recursive: true, force: true })

if (process.argv.includes('--json')) console.log(JSON.stringify({ n: N, figures, perTask }))
else
  for (const p of perTask)
    console.log(
      `per task, ${p.store}: a lock adds ${p.ms.toFixed(3)} ms  peer=${p.peerMs.toFixed(3)} ms  ratio=${(p.ms / p.peerMs).toFixed(2)}   (acquire + let go around one run; peer: ${p.peerLabel}, one pair per task, same loop; target on Redis: < 1 ms)`,
    )
if (!process.argv.includes('--json'))
  for (const f of figures)
    console.log(
      `${f.name}  tsq=${f.tsq.toFixed(0)}/s  peer=${f.peer.toFixed(0)}/s  ratio=${(f.tsq / f.peer).toFixed(2)}   (acquire+release per second; peer: ${f.peerLabel}; n=${N})`,
    )
