#!/usr/bin/env node
// Runs test files in parallel lanes, each file in its own `node --test`
// process, so the broker tiers take the time of their longest lane rather than
// their sum (most of their time is spent waiting on workers and brokers).
//
// Lanes are isolated where tests could see each other: each lane has its own
// RabbitMQ vhost and its own Redis databases (broker and events bus), so one
// lane's `inspect ping` or `status` never hears another lane's workers, and
// kombu's per-database `unacked_mutex` is not shared. Files in one lane run one
// after another, as the whole suite did before. A file that changes the broker
// for everyone (restarts it, lowers a global timeout, or needs the machine
// quiet to hit its window) says so with a line `// tsq-test: exclusive`, and
// runs alone after the parallel phase.
//
// The files are handed out longest first, so the lanes end together: by the
// seconds each took in a recorded run (test/lane-times.json), else by its
// `// tsq-test: slow N` (about N minutes). `TSQ_LANE_TIMES=write` records this
// run's times into that file.
//
// Usage: node scripts/run-lanes.mjs DIR|FILE...   (env LANES, default 8: the files mostly wait on
// workers and brokers, about 1.5 of the 2 cores' CPU at 8 lanes;
// TSQ_TEST_VHOST_PREFIX gives every lane, the first too, a vhost of its own
// named PREFIXn, for a second run on the same broker)
import { spawn, execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createServer, connect } from 'node:net'
import { join } from 'node:path'

const BASE_AMQP = process.env.TSQ_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672//'
const BASE_REDIS = process.env.TSQ_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0'
// Redis databases per lane: [broker, events bus]. Lane 0 keeps the defaults the
// tests use when run by hand; 8-13 and 15 are left to test files that pick their own.
// A fourth lane (LANES=4) takes 3 and 14, which helpers use for debugging by hand.
// Lanes past the fourth (LANES=5 and up) each start a Redis server of their own (databases 0 and 1
// on it), stopped at the end: the shared server has no databases left to give them.
const LANE_REDIS_DBS = [
  [0, 7],
  [2, 6],
  [4, 5],
  [3, 14],
]
const MAX_LANES = 8
const FILE_TIMEOUT_MS = Number(process.env.TSQ_TEST_FILE_TIMEOUT_MS ?? 20 * 60_000)
const VHOST_PREFIX = process.env.TSQ_TEST_VHOST_PREFIX
const TIMES_FILE = 'test/lane-times.json'

function testFiles(paths) {
  const out = []
  const walk = (p) => {
    if (statSync(p).isDirectory()) for (const name of readdirSync(p).sort()) walk(join(p, name))
    else if (p.endsWith('.test.ts')) out.push(p)
  }
  for (const p of paths) walk(p)
  return out
}

function rabbitmqctl() {
  return ['/usr/sbin/rabbitmqctl', '/usr/lib/rabbitmq/bin/rabbitmqctl'].find((p) => existsSync(p))
}

/** The lane's vhost on the local RabbitMQ, made if missing; null when lanes cannot have their own (no local rabbitmqctl). */
function laneVhost(lane) {
  if (lane === 0 && !VHOST_PREFIX) return '/'
  const tool = rabbitmqctl()
  const base = new URL(BASE_AMQP)
  if (!tool || !['127.0.0.1', 'localhost'].includes(base.hostname)) return null
  const vhost = `${VHOST_PREFIX ?? 'tsq-test-lane-'}${lane}`
  const user = decodeURIComponent(base.username || 'guest')
  try {
    execFileSync(tool, ['-q', 'add_vhost', vhost], { stdio: 'ignore' })
  } catch {
    // Already there (or it fails below as well).
  }
  try {
    execFileSync(tool, ['-q', 'set_permissions', '-p', vhost, user, '.*', '.*', '.*'], { stdio: 'ignore' })
  } catch {
    return null
  }
  return vhost
}

/** A free local port, for a lane's own Redis server. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

const ownRedis = []

/** A Redis server for one lane past the fourth, answering PING; null when none can be started here. */
async function laneRedis() {
  const base = new URL(BASE_REDIS)
  if (!['127.0.0.1', 'localhost'].includes(base.hostname)) return null
  const port = await freePort()
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--databases', '16'],
    { stdio: 'ignore' },
  )
  const spawned = await new Promise((resolve) => {
    child.once('spawn', () => resolve(true))
    child.once('error', () => resolve(false))
  })
  if (!spawned) return null
  ownRedis.push(child)
  for (let i = 0; i < 100; i += 1) {
    const answered = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('PING\r\n'))
      socket.once('data', (d) => {
        socket.destroy()
        resolve(d.toString().startsWith('+PONG'))
      })
      socket.once('error', () => resolve(false))
    })
    if (answered) return `redis://127.0.0.1:${port}/0`
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return null
}

function stopOwnRedis() {
  for (const child of ownRedis) child.kill('SIGTERM')
}
process.on('exit', stopOwnRedis)
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130))

function laneEnv(lane, vhost, ownRedisUrl) {
  const amqp = new URL(BASE_AMQP)
  amqp.pathname = `/${encodeURIComponent(vhost)}`
  const redis = new URL(ownRedisUrl ?? BASE_REDIS)
  const [brokerDb, busDb] = ownRedisUrl ? [0, 1] : LANE_REDIS_DBS[lane]
  redis.pathname = `/${brokerDb}`
  return {
    ...process.env,
    TSQ_TEST_AMQP_URL: vhost === '/' ? BASE_AMQP : amqp.toString().replace(/\/%2F$/, '//'),
    TSQ_TEST_REDIS_URL: lane === 0 && !ownRedisUrl ? BASE_REDIS : redis.toString(),
    TSQ_TEST_BUS_REDIS_DB: String(busDb),
    // Where the loss tests' task fixtures record their runs (their default is db 0).
    TSQ_LOSS_REDIS_URL: lane === 0 && !ownRedisUrl ? BASE_REDIS : redis.toString(),
    TSQ_TEST_LANE: String(lane),
  }
}

function runFile(file, env, label) {
  return new Promise((resolve) => {
    const started = Date.now()
    const cpuFile = TIME ? join(cpuDir, `${file.replaceAll('/', '_')}.cpu`) : undefined
    const argv = [process.execPath, '--import', 'tsx', '--test', '--test-reporter=spec', file]
    // GNU time reaps the file's process, which reaps what it spawned: the CPU seconds of the file's whole tree
    // (not the shared brokers'), a cost that load on the machine does not inflate as it does wall time.
    const [cmd, ...args] = cpuFile ? [TIME, '-f', '%U %S', '-o', cpuFile, ...argv] : argv
    const child = spawn(cmd, args, {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    const chunks = []
    child.stdout.on('data', (d) => chunks.push(d))
    child.stderr.on('data', (d) => chunks.push(d))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // Gone already.
      }
    }, FILE_TIMEOUT_MS)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const seconds = (Date.now() - started) / 1000
      const ok = code === 0 && !timedOut
      const why = timedOut ? ` (killed after ${FILE_TIMEOUT_MS / 1000} s)` : signal ? ` (${signal})` : ''
      const cpu = cpuSeconds(cpuFile)
      const cpuText = cpu === undefined ? '' : `, ${cpu.toFixed(1)} s CPU`
      process.stdout.write(`\n=== ${file} [${label}] ${ok ? 'ok' : 'FAILED'} in ${seconds.toFixed(1)} s${cpuText}${why}\n`)
      const output = Buffer.concat(chunks)
      process.stdout.write(output)
      resolve({ file, ok, seconds, cpu, label, failures: ok ? '' : failureSummary(output.toString('utf8')) })
    })
  })
}

const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined
const cpuDir = mkdtempSync(join(tmpdir(), 'tsq-lanes-cpu-'))
process.on('exit', () => rmSync(cpuDir, { recursive: true, force: true }))

/** User + system seconds GNU time wrote for a file's process tree; undefined without it. */
function cpuSeconds(cpuFile) {
  if (!cpuFile || !existsSync(cpuFile)) return undefined
  const m = /^(\d+(?:\.\d+)?) (\d+(?:\.\d+)?)\s*$/m.exec(readFileSync(cpuFile, 'utf8'))
  return m ? Number(m[1]) + Number(m[2]) : undefined
}

/** Most characters of a failed file's output repeated at the end of the run. */
const FAILURE_SUMMARY_MAX = 8000

/**
 * A failed file's errors, for the end of the run: a CI record may keep only the
 * log's tail, where a file's own output, printed when it ended, is not. The
 * spec reporter's closing "failing tests" section when there is one (each
 * failure with its error), else the output's last lines (a file killed, or
 * one that failed outside a test).
 */
function failureSummary(text) {
  const at = text.lastIndexOf('✖ failing tests:')
  const part = at >= 0 ? text.slice(at) : text.split('\n').slice(-60).join('\n')
  return part.length > FAILURE_SUMMARY_MAX
    ? `${part.slice(0, FAILURE_SUMMARY_MAX)}\n[… ${part.length - FAILURE_SUMMARY_MAX} more characters in the file's output above]`
    : part
}

const files = testFiles(process.argv.slice(2))
const exclusive = files.filter((f) => /^\/\/ tsq-test: exclusive\b/m.test(readFileSync(f, 'utf8')))
// Longest first, so the lanes end together instead of one lane starting a long file when
// the others are done: the seconds a recorded run took, else `slow N` (about N minutes; a
// file that says `// tsq-test: slow` starts clusters or runs for minutes), else half a minute.
const recorded = existsSync(TIMES_FILE) ? JSON.parse(readFileSync(TIMES_FILE, 'utf8')) : {}
const weight = (f) => {
  if (typeof recorded[f] === 'number') return recorded[f]
  const m = /^\/\/ tsq-test: slow(?: (\d+))?\b/m.exec(readFileSync(f, 'utf8'))
  return m ? Number(m[1] ?? 1) * 60 : 30
}
const weights = new Map(files.map((f) => [f, weight(f)]))
const shared = files.filter((f) => !exclusive.includes(f)).sort((a, b) => weights.get(b) - weights.get(a))
let lanes = Math.max(1, Math.min(Number(process.env.LANES ?? 8), MAX_LANES))
const vhosts = []
const redisOf = []
for (let lane = 0; lane < lanes; lane += 1) {
  const vhost = laneVhost(lane)
  if (vhost === null) {
    process.stdout.write(`[lanes] no vhost of its own for lane ${lane} (no local rabbitmqctl): running ${lane} lane(s)\n`)
    lanes = lane
    break
  }
  const redis = lane < LANE_REDIS_DBS.length ? undefined : await laneRedis()
  if (redis === null) {
    process.stdout.write(`[lanes] no Redis server of its own for lane ${lane} (no local redis-server): running ${lane} lane(s)\n`)
    lanes = lane
    break
  }
  vhosts.push(vhost)
  redisOf.push(redis)
}
process.stdout.write(`[lanes] ${shared.length} files in ${lanes} lanes, then ${exclusive.length} alone\n`)

const results = []
const queue = [...shared]
const started = Date.now()
await Promise.all(
  vhosts.map(async (vhost, lane) => {
    const env = laneEnv(lane, vhost, redisOf[lane])
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) results.push(await runFile(file, env, `lane ${lane}`))
  }),
)
for (const file of exclusive) results.push(await runFile(file, laneEnv(0, vhosts[0] ?? '/'), 'alone'))
if (process.env.TSQ_LANE_TIMES === 'write') {
  // Whole seconds, sorted by file, so a re-record changes only the lines that moved.
  const times = { ...recorded }
  for (const r of results) if (r.ok) times[r.file] = Math.round(r.seconds)
  const sorted = Object.fromEntries(
    Object.keys(times)
      .sort()
      .map((f) => [f, times[f]]),
  )
  writeFileSync(TIMES_FILE, `${JSON.stringify(sorted, null, 2)}\n`)
  process.stdout.write(`[lanes] times written to ${TIMES_FILE}\n`)
}

const failed = results.filter((r) => !r.ok)
process.stdout.write(`\n[lanes] ${results.length} files in ${((Date.now() - started) / 1000).toFixed(0)} s; slowest:\n`)
for (const r of [...results].sort((a, b) => b.seconds - a.seconds).slice(0, 12))
  process.stdout.write(`  ${r.seconds.toFixed(1).padStart(7)} s  ${r.file} [${r.label}]\n`)
const withCpu = results.filter((r) => r.cpu !== undefined)
if (withCpu.length) {
  const total = withCpu.reduce((sum, r) => sum + r.cpu, 0)
  process.stdout.write(`[lanes] ${total.toFixed(0)} s of CPU in the files' own processes; the most:\n`)
  for (const r of [...withCpu].sort((a, b) => b.cpu - a.cpu).slice(0, 12))
    process.stdout.write(`  ${r.cpu.toFixed(1).padStart(7)} s  ${r.file}\n`)
}
for (const r of failed) process.stdout.write(`\n[lanes] ${r.file} [${r.label}] failed:\n${r.failures.trimEnd()}\n`)
if (failed.length) process.stdout.write(`[lanes] FAILED: ${failed.map((r) => r.file).join(' ')}\n`)
process.exit(failed.length ? 1 : 0)
