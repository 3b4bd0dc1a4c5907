// bench/migrate: tasks moved per second by `tsq migrate` beside `celery migrate`
// (5.2.6) on the same 10,000 tasks, RabbitMQ to Redis and Redis to RabbitMQ.
// Both run as subprocesses with -a (a move); the clock runs from the spawn to
// the line of the last task (`Migrating task N/N`), because Celery's migrate
// from Redis never exits on its own (it is stopped, by pid, once it printed
// that line). Knobs: BENCH_N (default 10000). Queues are scratch ones, deleted.
import { spawn } from 'node:child_process'
import { Redis } from 'ioredis'
import { createApp } from '../src/index.js'
import amqplib from '../src/transport/amqp/amqplib.js'
import { BIN, ROOT } from '../test/helpers/cli.js'

const N = Number(process.env.BENCH_N ?? 10_000)
const AMQP = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672//'
const REDIS = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/12'
const queue = `cli-bench-migrate-${process.pid}`

async function fill(broker: string): Promise<void> {
  const app = createApp({ name: 'proj', broker })
  try {
    for (let i = 0; i < N; i += 500)
      await Promise.all(
        Array.from({ length: Math.min(500, N - i) }, (_, j) =>
          app.sendTask('proj.add', [i + j, 1], {}, { queue, priority: (i + j) % 10 === 0 ? 5 : undefined }),
        ),
      )
  } finally {
    await app.close()
  }
}

async function clear(): Promise<void> {
  const conn = await amqplib.connect(AMQP)
  const ch = await conn.createChannel()
  await ch.deleteQueue(queue).catch(() => undefined)
  await conn.close()
  const redis = new Redis(REDIS)
  await redis.del(queue, ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((s) => `${queue}\x06\x16${s}`), `_kombu.binding.${queue}`)
  redis.disconnect()
}

/** Seconds from spawn to the line of the N-th task; the process is then stopped by its pid if still running. */
function timeMigrate(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } })
    let tail = ''
    let done = false
    const onData = (d: Buffer) => {
      tail = (tail + d.toString()).slice(-1000)
      if (!done && tail.includes(`Migrating task ${N}/`)) {
        done = true
        resolve(Number(process.hrtime.bigint() - started) / 1e9)
        child.kill('SIGTERM')
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('exit', (code) => {
      if (!done) reject(new Error(`${cmd} ${args.join(' ')} exited ${code} before task ${N}:\n${tail}`))
    })
  })
}

const directions: Array<[string, string, string]> = [
  ['rabbitmq->redis', AMQP, REDIS],
  ['redis->rabbitmq', REDIS, AMQP],
]
const lines: string[] = []
for (const [name, from, to] of directions) {
  await clear()
  await fill(from)
  const tsq = await timeMigrate(process.execPath, [BIN, 'migrate', from, to, '-a', '-Q', queue])
  await clear()
  await fill(from)
  const peer = await timeMigrate('/usr/bin/python3', ['-m', 'celery', 'migrate', from, to, '-a', '-Q', queue])
  await clear()
  const rate = (s: number) => Math.round(N / s)
  lines.push(
    `migrate ${name}  tsq=${rate(tsq)} tasks/s  peer=${rate(peer)} tasks/s  ratio=${(rate(tsq) / rate(peer)).toFixed(2)}   (peer: celery migrate -a; ${N} tasks; tsq ${tsq.toFixed(2)}s, peer ${peer.toFixed(2)}s, from spawn)`,
  )
  process.stdout.write(`${lines.at(-1)}\n`)
}
