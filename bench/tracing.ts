// What tracing costs (docs/tracing.md): sends per second and a worker's drain
// rate, each with tracing off (configureTracing({ enabled: false })), with the
// API installed and no provider (`noop`: tsq's default without an SDK, one look
// at the global provider per send and run), and with a real SDK
// (@opentelemetry/sdk-trace-base, in-memory exporter: `sdk`). Redis only; each
// setup in a process of its own, as global providers cannot be unregistered.
//
//   npm run build && node --import tsx bench/tracing.ts [--count 20000] [--drain 20000] [--runs 3] [--modes off,noop,sdk] [--json]
//
// Sends: COUNT app.sendTask()s with 1,000 in flight, after an untimed warm-up.
// Drain: a `tsq worker -P solo` on an empty queue, then DRAIN traced messages
// (each with a traceparent, as a traced client sends them) pushed at once; the
// rate is DRAIN over the time from the push to the queue found empty.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { encodeTaskV2 } from '../src/protocol/index.js'
import { buildEnvelope, serializeEnvelope } from '../src/transport/kombu-envelope.js'
import { REDIS_URL, uniqueName } from '../test/helpers/brokers.js'
import { benchEnv, formatEnv } from './lib/env.js'

const ROOT = resolve(import.meta.dirname, '..')
const MODULE = resolve(ROOT, 'bench/fixtures/traced-noop-tasks.js')
type Mode = 'off' | 'noop' | 'sdk'

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '20000' },
    drain: { type: 'string', default: '20000' },
    runs: { type: 'string', default: '3' },
    modes: { type: 'string', default: 'off,noop,sdk' },
    json: { type: 'boolean', default: false },
    child: { type: 'string' },
  },
})
const COUNT = Number(values.count)
const DRAIN = Number(values.drain)
const WINDOW = 1000

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint()
  await run()
  return Number(process.hrtime.bigint() - start) / 1e6
}

/** In a child: the send figure for the setup TSQ_BENCH_TRACING names (tsq from src/, the SDK from the fixture module). */
async function sendsChild(): Promise<void> {
  const { configureTracing, createApp } = await import('../src/index.js')
  const mode = process.env.TSQ_BENCH_TRACING as Mode
  if (mode === 'off') configureTracing({ enabled: false })
  if (mode === 'sdk') await import(MODULE) // registers the SDK at its top
  const queue = uniqueName('tsq-bench-trace')
  const sender = createApp({ name: 'proj', broker: REDIS_URL, defaultQueue: queue })
  try {
    await sender.sendTask('proj.noop', [-1])
    let next = 0
    const lane = async () => {
      while (next < COUNT) await sender.sendTask('proj.noop', [next++])
    }
    const ms = await timed(() => Promise.all(Array.from({ length: WINDOW }, lane)))
    process.stdout.write(`${JSON.stringify({ sendsPerSecond: (COUNT * 1000) / ms })}\n`)
  } finally {
    await sender.close()
    const redis = new Redis(REDIS_URL)
    await redis.del(queue)
    redis.disconnect()
  }
}

function child(mode: Mode): Promise<{ sendsPerSecond: number }> {
  return new Promise((ok, fail) => {
    const p = spawn(
      process.execPath,
      ['--import', 'tsx', resolve(ROOT, 'bench/tracing.ts'), '--child', 'sends', '--count', String(COUNT)],
      {
        env: { ...process.env, TSQ_BENCH_TRACING: mode },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let out = ''
    p.stdout.on('data', (d) => (out += d))
    p.on('exit', (code) =>
      code === 0 ? ok(JSON.parse(out.trim().split('\n').at(-1)!)) : fail(new Error(`sends child (${mode}) exited ${code}`)),
    )
  })
}

/** A traced message, as a client with an SDK sends it. */
function tracedEnvelope(queue: string): string {
  const m = encodeTaskV2('proj.noop', { args: [1], origin: 'gen1@bench' })
  const headers = { ...(m.headers as Record<string, unknown>) }
  headers.traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`
  headers.tsq_sent_at = Date.now() / 1000
  const message = {
    body: Buffer.from(m.body),
    properties: {
      contentType: m.contentType,
      contentEncoding: m.contentEncoding,
      headers: headers as Record<string, never>,
      deliveryMode: 2 as const,
      priority: 0,
      correlationId: m.properties.correlationId,
      replyTo: m.properties.replyTo,
    },
  }
  return serializeEnvelope(buildEnvelope('', queue, message))
}

async function drain(mode: Mode): Promise<number> {
  const queue = uniqueName('tsq-bench-trace-drain')
  const redis = new Redis(REDIS_URL)
  const worker = spawn(
    process.execPath,
    [
      resolve(ROOT, 'bin/run.js'),
      'worker',
      '-A',
      MODULE,
      '-b',
      REDIS_URL,
      '-Q',
      queue,
      '-P',
      'solo',
      '-l',
      'WARNING',
      '--without-mingle',
      '--without-gossip',
      '-n',
      `${queue}@%h`,
    ],
    { env: { ...process.env, TSQ_BENCH_TRACING: mode, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  )
  let log = ''
  worker.stdout!.on('data', (d) => (log += d))
  worker.stderr!.on('data', (d) => (log += d))
  try {
    // Ready: a message pushed now is taken.
    await redis.lpush(queue, tracedEnvelope(queue))
    const deadline = Date.now() + 60_000
    while ((await redis.llen(queue)) > 0) {
      if (Date.now() > deadline || worker.exitCode !== null) throw new Error(`worker (${mode}) took nothing:\n${log}`)
      await new Promise((r) => setTimeout(r, 50))
    }
    const envelopes = Array.from({ length: DRAIN }, () => tracedEnvelope(queue))
    const start = process.hrtime.bigint()
    for (let i = 0; i < envelopes.length; i += 1000) await redis.lpush(queue, ...envelopes.slice(i, i + 1000))
    while ((await redis.llen(queue)) > 0) await new Promise((r) => setTimeout(r, 20))
    return (DRAIN * 1e9) / Number(process.hrtime.bigint() - start)
  } finally {
    try {
      process.kill(-worker.pid!, 'SIGKILL')
    } catch {
      /* gone */
    }
    await redis.del(queue)
    redis.disconnect()
  }
}

if (values.child === 'sends') {
  await sendsChild()
} else {
  const modes = values.modes!.split(',') as Mode[]
  const out: Array<{ mode: Mode; run: number; sendsPerSecond: number; drainPerSecond: number }> = []
  if (!values.json) process.stdout.write(`${formatEnv(benchEnv('/usr/bin/python3'))}\n`)
  for (let run = 1; run <= Number(values.runs); run++) {
    for (const mode of modes) {
      const { sendsPerSecond } = await child(mode)
      const drainPerSecond = await drain(mode)
      out.push({ mode, run, sendsPerSecond, drainPerSecond })
      if (!values.json)
        process.stdout.write(
          `run ${run}  ${mode.padEnd(5)}  sends ${Math.round(sendsPerSecond).toString().padStart(7)}/s   drain ${Math.round(drainPerSecond).toString().padStart(7)}/s\n`,
        )
    }
  }
  if (values.json) process.stdout.write(`${JSON.stringify(out)}\n`)
}
