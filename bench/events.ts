// The events bus, tsq beside celery-amqp-events on Celery 5.2.6 (its git
// snapshot on PYTHONPATH), from one run, on RabbitMQ and Redis:
//
//   fire-confirmed   events fired per second, one after another, each confirmed
//                    by the broker (tsq: fireEvent, what `await invoicePaid(x)`
//                    does; peer: send_task(E, routing_key=E) with confirm_publish)
//   handled-2-svc    events handled per second by two services that both handle
//                    the event (one worker each; every event runs twice)
//   retry-10pct      events handled per second when 10% of first runs fail and
//                    go round the broker-side retry path (step 0, 1 s) once
//
//   npm run build && node --import tsx bench/events.ts [--events 2000] [--broker amqp --broker redis] [--json]
//
// Method: the handler queues are declared, then filled with N events while no
// worker runs; the workers (tsq solo -c 8; Celery prefork -c 2, the library's
// README flags) then start, and the rate is the runs counted in the handlers'
// log between its first and last entry (start-up is not counted). Every
// process is stopped by its pid (or its own process group); every queue,
// exchange and lot the bench made is deleted.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { fireEvent } from '../src/bus/events-app.js'
import { declareTopology } from '../src/bus/declare.js'
import { handlerQueueName } from '../src/bus/names.js'
import { resolveBusSettings } from '../src/bus/settings.js'
import { busTopology } from '../src/bus/topology.js'
import { createTransport, type Transport } from '../src/transport/index.js'
import { benchEnv, formatEnv } from './lib/env.js'
import { cleanupService } from '../test/e2e/bus-support.js'

const ROOT = resolve(import.meta.dirname, '..')
const TSQ_BIN = resolve(ROOT, 'bin/run.js')
const SERVICE_MODULE = resolve(ROOT, 'test/fixtures/bus/service.js')
const PY_DIR = resolve(ROOT, 'test/interop/py')
const PYTHON = '/usr/bin/python3'
const LIBRARY_GIT = process.env.TSQ_AMQP_EVENTS_GIT ?? '/work/.mirror/just-work+celery-amqp-events/repo'
const URLS = { amqp: 'amqp://guest:guest@127.0.0.1:5672//', redis: 'redis://127.0.0.1:6379/0' } as const
type Kind = keyof typeof URLS

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '2000' },
    broker: { type: 'string', multiple: true },
    json: { type: 'boolean', default: false },
  },
})
const N = Number(values.events)
const kinds = ((values.broker as Kind[] | undefined) ?? ['amqp', 'redis']).filter((k) => k in URLS)
const out = (line: string) => (values.json ? process.stderr : process.stdout).write(`${line}\n`)

interface Rate {
  name: string
  tsq: number | null
  peer: number | null
  peerLabel: string
}

const rates: Rate[] = []
const scratch: Array<{ kind: Kind; service: string; events: string[] }> = []
let libDir = ''
let seq = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${(seq += 1)}`

function rateLine(r: Rate): string {
  const f = (v: number | null) => (v === null ? 'n/a' : `${v.toFixed(0)}/s`)
  const ratio = r.tsq !== null && r.peer ? (r.tsq / r.peer).toFixed(2) : 'n/a'
  return `${r.name}  tsq=${f(r.tsq)}  peer=${f(r.peer)}  ratio=${ratio}   (peer: ${r.peerLabel}; higher is faster)`
}

async function withTransport<T>(kind: Kind, work: (t: Transport) => Promise<T>): Promise<T> {
  const t = await createTransport(URLS[kind])
  await t.connect()
  try {
    return await work(t)
  } finally {
    await t.close()
  }
}

function runsIn(log: string): Array<{ at: number; ok: boolean }> {
  if (!existsSync(log)) return []
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { at: number; ok: boolean })
}

/** Runs per second between the log's first entry and the entry that completes `want` successful runs. */
async function measureLog(log: string, want: number, timeoutMs: number): Promise<number | null> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const runs = runsIn(log)
    const ok = runs.filter((r) => r.ok)
    if (ok.length >= want) {
      const first = Math.min(...runs.map((r) => r.at))
      const last = Math.max(...ok.map((r) => r.at))
      return (ok.length / Math.max(1, last - first)) * 1000
    }
    if (Date.now() > deadline) return null
    await new Promise((r) => setTimeout(r, 100))
  }
}

class Proc {
  output = ''
  constructor(readonly child: ChildProcess) {
    child.stdout?.on('data', (d) => (this.output = (this.output + d).slice(-20_000)))
    child.stderr?.on('data', (d) => (this.output = (this.output + d).slice(-20_000)))
  }
  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!/\bready\.\s*$/m.test(this.output)) {
      if (this.child.exitCode !== null || Date.now() > deadline) throw new Error(`worker did not start:\n${this.output.slice(-3000)}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  async stop(): Promise<void> {
    const pid = this.child.pid
    if (pid === undefined || this.child.exitCode !== null) return
    const exited = new Promise((r) => this.child.once('exit', r))
    try {
      process.kill(-pid, 'SIGTERM')
    } catch {
      /* gone */
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-pid, 'SIGKILL')
      } catch {
        /* gone */
      }
    }, 15_000)
    await exited
    clearTimeout(timer)
  }
}

function tsqWorker(kind: Kind, service: string, event: string, log: string, env: NodeJS.ProcessEnv = {}): Proc {
  const args = [
    TSQ_BIN,
    'worker',
    '-A',
    SERVICE_MODULE,
    '-b',
    URLS[kind],
    '-n',
    `${service}@bench`,
    '-P',
    'solo',
    '-c',
    '8',
    '-l',
    'WARNING',
    '--without-mingle',
    '--without-gossip',
    '--without-heartbeat',
  ]
  return new Proc(
    spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1', BUS_SERVICE: service, BUS_EVENTS: event, BUS_LOG: log, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    }),
  )
}

function pyEnv(kind: Kind, service: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PYTHONPATH: `${libDir}:${PY_DIR}`,
    PYTHONDONTWRITEBYTECODE: '1',
    BUS_SERVICE: service,
    BUS_BROKER: URLS[kind],
    ...extra,
  }
}

function pyWorker(kind: Kind, service: string, event: string, log: string, env: NodeJS.ProcessEnv = {}, level = 'WARNING'): Proc {
  const args = [
    '-m',
    'celery',
    '-A',
    'bus_service',
    'worker',
    '-P',
    'prefork',
    '-c',
    '2',
    '-l',
    level,
    '-n',
    `${service}@bench`,
    '--without-mingle',
    '--without-gossip',
    '--without-heartbeat',
  ]
  return new Proc(
    spawn(PYTHON, args, {
      cwd: PY_DIR,
      env: pyEnv(kind, service, { BUS_EVENTS: event, BUS_LOG: log, ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    }),
  )
}

async function fireMany(kind: Kind, event: string, n: number): Promise<number> {
  return withTransport(kind, async (t) => {
    await fireEvent(t, event, [-1])
    const start = performance.now()
    for (let i = 0; i < n; i += 1) await fireEvent(t, event, [i])
    return (n / (performance.now() - start)) * 1000
  })
}

/** The handler queues of `services`, declared as their workers will, so that events fired now wait for them. */
async function declareServices(kind: Kind, services: string[], event: string): Promise<void> {
  await withTransport(kind, async (t) => {
    for (const s of services) {
      scratch.push({ kind, service: s, events: [event] })
      await declareTopology(t, busTopology(s, [event], resolveBusSettings({}, {}), { steps: kind === 'amqp' }))
    }
  })
}

async function benchFire(kind: Kind): Promise<void> {
  const event = `${unique('bench.ev')}.fired`
  const sink = unique('bench-sink')
  await declareServices(kind, [sink], event)
  const tsqRate = await fireMany(kind, event, N)
  let peer: number | null = null
  if (libDir) {
    const pyService = unique('bench-pyfire')
    scratch.push({ kind, service: pyService, events: [] })
    const res = execFileSync(PYTHON, [resolve(ROOT, 'bench/peers/events_fire.py'), event, String(N)], {
      cwd: PY_DIR,
      env: pyEnv(kind, pyService),
      encoding: 'utf8',
      timeout: 600_000,
    })
    const { events, seconds } = JSON.parse(res.trim().split('\n').at(-1)!) as { events: number; seconds: number }
    peer = events / seconds
  }
  await withTransport(kind, (t) => t.purge(handlerQueueName(sink, event)))
  rates.push({ name: `fire-confirmed-${kind}`, tsq: tsqRate, peer, peerLabel: 'celery-amqp-events send_task, confirm_publish' })
  out(rateLine(rates.at(-1)!))
}

/** N events pre-filled, then handled by the workers `start` makes; runs/s from the handlers' log. */
async function handledRate(
  kind: Kind,
  services: string[],
  event: string,
  want: number,
  start: (service: string, log: string) => Proc,
  declare: () => Promise<void>,
): Promise<number | null> {
  const log = join(mkdtempSync(join(tmpdir(), 'tsq-bench-events-')), 'runs.jsonl')
  await declare()
  await withTransport(kind, async (t) => {
    for (let i = 0; i < N; i += 1) await fireEvent(t, event, [i])
  })
  // At -l WARNING a worker says nothing when ready: the queues are full, so its first run is the start.
  const procs = services.map((s) => start(s, log))
  try {
    const rate = await measureLog(log, want, 600_000)
    if (rate === null) out(`no rate: ${procs.map((p) => p.output.slice(-1500)).join('\n')}`)
    return rate
  } finally {
    await Promise.all(procs.map((p) => p.stop()))
  }
}

/** A Python worker declares its service's topology as it starts (the library does it on finalize): start it once, stop it. */
async function declareByPython(kind: Kind, services: string[], event: string): Promise<void> {
  for (const s of services) scratch.push({ kind, service: s, events: [event] })
  const procs = services.map((s) => pyWorker(kind, s, event, '/dev/null', {}, 'INFO'))
  try {
    await Promise.all(procs.map((p) => p.ready()))
  } finally {
    await Promise.all(procs.map((p) => p.stop()))
  }
}

async function benchHandled(kind: Kind): Promise<void> {
  const event = `${unique('bench.ev')}.handled`
  const tsqServices = [unique('bench-ta'), unique('bench-tb')]
  const tsqRate = await handledRate(
    kind,
    tsqServices,
    event,
    2 * N,
    (s, log) => tsqWorker(kind, s, event, log),
    () => declareServices(kind, tsqServices, event),
  )
  let peer: number | null = null
  if (libDir) {
    const pyServices = [unique('bench-pa'), unique('bench-pb')]
    peer = await handledRate(
      kind,
      pyServices,
      event,
      2 * N,
      (s, log) => pyWorker(kind, s, event, log),
      () => declareByPython(kind, pyServices, event),
    )
  }
  rates.push({ name: `handled-2-svc-${kind}`, tsq: tsqRate, peer, peerLabel: 'celery-amqp-events, Celery prefork -c 2 per service' })
  out(rateLine(rates.at(-1)!))
}

async function benchRetry(kind: Kind): Promise<void> {
  const event = `${unique('bench.ev')}.flaky`
  const failing = { BUS_FAIL_MODULO: '10' }
  const tsqService = unique('bench-tr')
  const tsqRate = await handledRate(
    kind,
    [tsqService],
    event,
    N,
    (s, log) => tsqWorker(kind, s, event, log, failing),
    () => declareServices(kind, [tsqService], event),
  )
  let peer: number | null = null
  let label = 'celery-amqp-events, Celery prefork -c 2'
  if (!libDir) label = 'no peer (celery-amqp-events not found)'
  else if (kind !== 'amqp')
    label = "no peer: celery-amqp-events' retries need RabbitMQ (on Redis its retry exchange is pub/sub, the retry is lost)"
  else {
    const pyService = unique('bench-pr')
    peer = await handledRate(
      kind,
      [pyService],
      event,
      N,
      (s, log) => pyWorker(kind, s, event, log, failing),
      () => declareByPython(kind, [pyService], event),
    )
  }
  rates.push({ name: `retry-10pct-${kind}`, tsq: tsqRate, peer, peerLabel: label })
  out(rateLine(rates.at(-1)!))
}

async function reachable(kind: Kind): Promise<boolean> {
  try {
    await withTransport(kind, async () => undefined)
    return true
  } catch {
    return false
  }
}

async function main(): Promise<void> {
  if (existsSync(LIBRARY_GIT)) {
    libDir = mkdtempSync(join(tmpdir(), 'amqp-events-'))
    execFileSync('sh', ['-c', `git --git-dir="${LIBRARY_GIT}" archive HEAD amqp_events | tar -x -C "${libDir}"`])
  } else out(`celery-amqp-events not found at ${LIBRARY_GIT} (TSQ_AMQP_EVENTS_GIT): tsq figures only`)
  const env = benchEnv(PYTHON)
  out(`# events  ${formatEnv(env)}  events=${N}`)
  try {
    for (const kind of kinds) {
      if (!(await reachable(kind))) {
        out(`${kind}: broker not reachable on 127.0.0.1, skipped`)
        continue
      }
      await benchFire(kind)
      await benchHandled(kind)
      await benchRetry(kind)
    }
  } finally {
    for (const s of scratch) await cleanupService({ kind: s.kind, url: URLS[s.kind], env: {} }, s.service, s.events).catch(() => undefined)
    if (libDir) rmSync(libDir, { recursive: true, force: true })
  }
  if (values.json) process.stdout.write(`${JSON.stringify({ env, events: N, figures: rates })}\n`)
}

await main()
