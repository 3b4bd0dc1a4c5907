// bench/dashboard: how `tsq dashboard` keeps up with a cluster's events and
// what it holds, beside Flower (mher/flower from a source checkout given by
// FLOWER_SRC, run by bench/peers/flower_run.py) fed the same events in the
// same run. Both listen on RabbitMQ; this process publishes task events
// (received, started, succeeded per task) to celeryev in `task.multi`
// batches, as fast as the broker confirms them.
//
//   events/s   events the monitor applied per second, from the first publish
//              until its count reached what was sent
//   lag        from the last publish until the monitor had applied it all
//   rss        the monitor's resident memory after --tasks and --big tasks
//              (both run with max tasks 100,000, so it should stay flat)
//   search     GET /api/tasks?search=<an arg of one task>&limit=20, median of 5
//   page       GET /api/tasks?limit=25&offset=50&sort_by=-received, median of 5
//
// Knobs: --tasks 100000, --big 1000000 (0 skips), --batch 200 events per
// message. FLOWER_SRC=/path/to/flower-checkout adds Flower; without it only
// tsq's figures print. Prints one line per figure.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { request } from 'node:http'
import { resolve } from 'node:path'
import { declareEventExchange, EVENT_EXCHANGE } from '../src/client/event-receiver.js'
import { createTransport } from '../src/transport/index.js'
import { processMemoryKb } from './lib/proc-memory.js'

const AMQP = process.env.TSQ_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672//'
const ROOT = resolve(import.meta.dirname, '..')
const arg = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(name)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const TASKS = arg('--tasks', 100_000)
const BIG = arg('--big', 1_000_000)
const BATCH = arg('--batch', 200)
const FLOWER_SRC = process.env.FLOWER_SRC
/** Node flags for the dashboard's process, e.g. `--cpu-prof --cpu-prof-dir=DIR` to see where its time goes. */
const NODE_ARGS = (process.env.TSQ_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)

interface Monitor {
  name: string
  child: ChildProcess
  base: string
  /** Events applied so far. */
  applied(): Promise<number>
  /** The dashboard's own process's resident set (Flower: the Python process). */
  pid: number
}

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolveGet, reject) => {
    const req = request(url, { agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (d) => (body += d))
      res.on('end', () => resolveGet({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function waitOutput(child: ChildProcess, pattern: RegExp, what: string): Promise<RegExpExecArray> {
  let out = ''
  child.stdout?.on('data', (d) => (out += d))
  child.stderr?.on('data', (d) => (out += d))
  const deadline = Date.now() + 120_000
  for (;;) {
    const m = pattern.exec(out)
    if (m) return m
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${what} did not start:\n${out.slice(-2000)}`)
    await sleep(100)
  }
}

async function startTsq(): Promise<Monitor> {
  const child = spawn(
    process.execPath,
    [...NODE_ARGS, resolve(ROOT, 'bin/run.js'), 'dashboard', '-b', AMQP, '--port', '0', '--max-tasks', '100000', '--no-enable-events'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const base = (await waitOutput(child, /visit me at (\S+)/, 'tsq dashboard'))[1]!.replace(/\/$/, '')
  return {
    name: 'tsq',
    child,
    base,
    pid: child.pid!,
    applied: async () => (JSON.parse((await get(`${base}/api/ui/summary`)).body) as { events: number }).events,
  }
}

async function startFlower(port: number): Promise<Monitor> {
  const child = spawn(
    '/usr/bin/python3',
    [
      resolve(ROOT, 'bench/peers/flower_run.py'),
      '--broker',
      AMQP,
      'flower',
      `--port=${port}`,
      '--address=127.0.0.1',
      '--max_tasks=100000',
      '--enable_events=False',
      '--inspect_timeout=1000',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PYTHONPATH: FLOWER_SRC, FLOWER_UNAUTHENTICATED_API: 'true' } },
  )
  await waitOutput(child, /Visit me at|Connected to amqp/, 'flower')
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; i < 100; i++) {
    if ((await get(`${base}/healthcheck`).catch(() => ({ status: 0 }))).status === 200) break
    await sleep(200)
  }
  return {
    name: 'flower',
    child,
    base,
    pid: child.pid!,
    // Flower counts events per worker and type in /metrics.
    applied: async () => {
      const text = (await get(`${base}/metrics`)).body
      let sum = 0
      for (const line of text.split('\n')) if (line.startsWith('flower_events_total{')) sum += Number(line.slice(line.lastIndexOf(' ') + 1))
      return sum
    },
  }
}

const rssMb = (pid: number): number => (processMemoryKb(pid)?.rss ?? 0) / 1024

async function publishTasks(from: number, count: number): Promise<{ events: number }> {
  const transport = await createTransport(AMQP)
  await transport.connect()
  await declareEventExchange(transport)
  let batch: Record<string, unknown>[] = []
  let events = 0
  const flush = async (): Promise<void> => {
    if (!batch.length) return
    await transport.publish(EVENT_EXCHANGE, 'task.multi', {
      body: Buffer.from(JSON.stringify(batch)),
      properties: {
        contentType: 'application/json',
        contentEncoding: 'utf-8',
        headers: { hostname: 'bench@dashboard' },
        deliveryMode: 1,
        priority: 0,
      },
    })
    events += batch.length
    batch = []
  }
  const now = () => Date.now() / 1000
  for (let i = from; i < from + count; i++) {
    const uuid = randomUUID()
    const base = { hostname: 'bench@dashboard', utcoffset: 0, pid: 1, clock: i }
    batch.push({
      type: 'task-received',
      uuid,
      name: `bench.task${i % 7}`,
      args: `(${i}, 'payload-${i}')`,
      kwargs: `{'n': ${i}}`,
      retries: 0,
      eta: null,
      expires: null,
      root_id: uuid,
      parent_id: null,
      timestamp: now(),
      ...base,
    })
    batch.push({ type: 'task-started', uuid, timestamp: now(), ...base })
    batch.push({ type: 'task-succeeded', uuid, result: `${i * 2}`, runtime: 0.001 + (i % 100) / 10_000, timestamp: now(), ...base })
    if (batch.length >= BATCH) await flush()
  }
  await flush()
  await transport.close()
  return { events }
}

async function timeGet(url: string, times = 5): Promise<number> {
  const ms: number[] = []
  for (let i = 0; i < times; i++) {
    const t = performance.now()
    const res = await get(url)
    ms.push(performance.now() - t)
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${res.body.slice(0, 200)}`)
  }
  return ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)]!
}

interface Fed {
  rate: number
  lag: number
  /** Share of the published events the monitor never applied (it stopped counting short). */
  lost: number
}

async function feed(monitors: Monitor[], from: number, count: number): Promise<Map<string, Fed>> {
  const start = new Map<string, number>()
  for (const m of monitors) start.set(m.name, await m.applied())
  const t0 = performance.now()
  const { events } = await publishTasks(from, count)
  const t1 = performance.now()
  const out = new Map<string, Fed>()
  await Promise.all(
    monitors.map(async (m) => {
      // Flower's counter sees task events only, which is all this feed sends.
      const target = start.get(m.name)! + events
      // A monitor that drops events never reaches the target: it is done when
      // its count has not moved for STALL ms, and what it missed is reported.
      const STALL = 20_000
      let last = -1
      let lastMoved = performance.now()
      let at: number
      for (;;) {
        at = await m.applied()
        if (at >= target) break
        if (at !== last) {
          last = at
          lastMoved = performance.now()
        } else if (performance.now() - lastMoved > STALL) break
        await sleep(100)
      }
      const done = at >= target ? performance.now() : lastMoved
      const applied = Math.min(events, at - start.get(m.name)!)
      out.set(m.name, { rate: applied / ((done - t0) / 1000), lag: (done - t1) / 1000, lost: 1 - applied / events })
    }),
  )
  process.stdout.write(`published ${events} events in ${((t1 - t0) / 1000).toFixed(1)} s (${(events / ((t1 - t0) / 1000)).toFixed(0)}/s)\n`)
  return out
}

function line(name: string, values: Map<string, number>, unit: string, digits = 1): void {
  const fmt = (v: number | undefined) => (v === undefined ? 'n/a' : `${v.toFixed(digits)}${unit}`)
  const tsq = values.get('tsq')
  const flower = values.get('flower')
  const ratio = tsq !== undefined && flower ? `  ratio=${(tsq / flower).toFixed(2)}` : ''
  process.stdout.write(`${name}  tsq=${fmt(tsq)}  flower=${fmt(flower)}${ratio}\n`)
}

/** Search and paging with the table full; `seen` tasks were fed so far (the newest 100,000 are held). */
async function answerTimes(monitors: Monitor[], seen: number): Promise<void> {
  const needle = `payload-${seen - 1000}'`
  const search = new Map<string, number>()
  const page = new Map<string, number>()
  const table = new Map<string, number>()
  for (const m of monitors) {
    search.set(m.name, await timeGet(`${m.base}/api/tasks?search=${encodeURIComponent(needle)}&limit=20`))
    page.set(m.name, await timeGet(`${m.base}/api/tasks?limit=25&offset=50&sort_by=-received`))
    // The page the task table itself asks for (Flower's table pages through /tasks/datatable).
    table.set(
      m.name,
      await timeGet(
        m.name === 'tsq'
          ? `${m.base}/api/ui/tasks?limit=25&offset=25&sort_by=-runtime`
          : `${m.base}/tasks/datatable?draw=1&start=25&length=25&order[0][column]=7&order[0][dir]=desc&columns[7][data]=runtime&search[value]=`,
      ),
    )
  }
  line(`search /api/tasks?search= (after ${seen} tasks)`, search, ' ms')
  line('page /api/tasks?limit=25&offset=50&sort_by=-received', page, ' ms')
  line('task table page sorted by runtime', table, ' ms')
}

/** The dashboard's own figure of its V8 heap in use: RSS keeps pages V8 freed, this shows what the state holds. */
async function heapLine(monitors: Monitor[], label: string): Promise<void> {
  const tsq = monitors.find((m) => m.name === 'tsq')
  if (!tsq) return
  const { heapUsedMb } = JSON.parse((await get(`${tsq.base}/api/ui/summary`)).body) as { heapUsedMb: number }
  process.stdout.write(`${label}  ${heapUsedMb.toFixed(1)} MB\n`)
}

const monitors: Monitor[] = []
try {
  monitors.push(await startTsq())
  if (FLOWER_SRC && existsSync(resolve(FLOWER_SRC, 'flower'))) monitors.push(await startFlower(15_000 + (process.pid % 500)))
  else process.stdout.write('(flower: set FLOWER_SRC to a mher/flower checkout to measure it beside tsq)\n')
  await sleep(3000)
  const first = await feed(monitors, 0, TASKS)
  line(`events/s (${TASKS} tasks, ${TASKS * 3} events)`, new Map([...first].map(([k, v]) => [k, v.rate])), '/s', 0)
  line('lag after last publish', new Map([...first].map(([k, v]) => [k, v.lag])), ' s', 2)
  line('events never applied', new Map([...first].map(([k, v]) => [k, v.lost * 100])), ' %')
  await sleep(2000)
  line(`rss after ${TASKS} tasks`, new Map(monitors.map((m) => [m.name, rssMb(m.pid)])), ' MB')
  await heapLine(monitors, `tsq heap in use after ${TASKS} tasks`)
  await answerTimes(monitors, TASKS)
  if (BIG > TASKS) {
    const more = await feed(monitors, TASKS, BIG - TASKS)
    line(`events/s (${BIG - TASKS} more tasks)`, new Map([...more].map(([k, v]) => [k, v.rate])), '/s', 0)
    line('lag after last publish', new Map([...more].map(([k, v]) => [k, v.lag])), ' s', 2)
    line('events never applied', new Map([...more].map(([k, v]) => [k, v.lost * 100])), ' %')
    await sleep(2000)
    line(`rss after ${BIG} tasks (max 100000 held)`, new Map(monitors.map((m) => [m.name, rssMb(m.pid)])), ' MB')
    await heapLine(monitors, `tsq heap in use after ${BIG} tasks`)
    await answerTimes(monitors, BIG)
  }
  process.stdout.write(
    `load average at the end: ${(await import('node:os'))
      .loadavg()
      .map((n) => n.toFixed(1))
      .join(' ')} on ${(await import('node:os')).availableParallelism()} CPUs\n`,
  )
} finally {
  for (const m of monitors) {
    m.child.kill('SIGTERM')
    await new Promise((r) => (m.child.exitCode !== null ? r(null) : m.child.once('exit', r)))
  }
}
