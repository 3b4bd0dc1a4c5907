// `tsq multi` end to end, as an operator's shell script runs it: start three
// workers with per-node concurrency, restart them without repeating options,
// kill them and start again past the stale pidfiles, stopwait.
import { describe, it, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

const ROOT = resolve(import.meta.dirname, '../..')
const RUN = join(ROOT, 'bin/run.js')
const TASKS = join(ROOT, 'examples/tasks.js')
const HOST = hostname()

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function tsq(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [RUN, ...args], {
      env: { ...process.env, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      fail(new Error(`tsq ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on('close', (code) => {
      clearTimeout(timer)
      done({ code, stdout, stderr })
    })
  })
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')
  } catch {
    return false
  }
}

/** Live processes whose command line names one of our nodes: the safety net and the "no worker left" check. */
function workerPids(prefix: string): number[] {
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      if (cmd.includes(`${prefix}1@`) || cmd.includes(`${prefix}2@`) || cmd.includes(`${prefix}3@`)) {
        if (Number(entry) !== process.pid && alive(Number(entry))) out.push(Number(entry))
      }
    } catch {
      // The process ended while we looked.
    }
  }
  return out
}

function scenario(kind: 'file' | 'amqp'): void {
  const prefix = uniqueName(`m${kind}`).replace(/-/g, '')
  const nodes = [1, 2, 3].map((i) => `${prefix}${i}@${HOST}`)
  const queue = uniqueName('tsq-multi-q')
  let dir = ''
  let env: NodeJS.ProcessEnv = {}
  const broker = kind === 'amqp' ? ['-b', AMQP_URL] : []
  const nodeArgs = ['3', `--range-prefix=${prefix}`]
  const startArgs = () => [
    ...nodeArgs,
    '-A',
    TASKS,
    ...broker,
    '-Q',
    queue,
    '-c',
    '2',
    '-c:1',
    '4',
    '--without-mingle',
    '--without-gossip',
    `--logfile=${dir}/%n%I.log`,
    `--pidfile=${dir}/%n.pid`,
  ]
  const pids = () => nodes.map((n) => Number(readFileSync(join(dir, `${n.split('@')[0]}.pid`), 'utf8').trim()))
  const concurrency = async (): Promise<Record<string, number>> => {
    const r = await tsq(['inspect', 'stats', '--json', '-d', nodes.join(','), '-t', '5', ...broker], env)
    assert.equal(r.code, 0, r.stderr + nodeLogs())
    const stats = JSON.parse(r.stdout) as Record<string, { pool: { 'max-concurrency': number } }>
    return Object.fromEntries(Object.entries(stats).map(([n, s]) => [n, s.pool['max-concurrency']]))
  }
  const expected = { [nodes[0]!]: 4, [nodes[1]!]: 2, [nodes[2]!]: 2 }
  /** The tails of the nodes' log files, for a failure's message: the directory goes with the run. */
  const nodeLogs = (): string => {
    if (!dir || !existsSync(dir)) return ''
    const logs = readdirSync(dir)
      .filter((f) => f.endsWith('.log'))
      .sort()
    return logs.map((f) => `\n--- ${f} ---\n${readFileSync(join(dir, f), 'utf8').slice(-3000)}`).join('')
  }

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tsq-multi-e2e-'))
    env = { TSQ_HOME: join(dir, 'home') }
  })

  after(async () => {
    if (dir) await tsq(['multi', 'kill', ...nodeArgs, '-q'], env).catch(() => undefined)
    for (const pid of workerPids(prefix)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
    if (dir) rmSync(dir, { recursive: true, force: true })
    if (kind === 'amqp') await deleteCeleryQueues('amqp', AMQP_URL, [queue])
  })

  it('start 3 -c 2 -c:1 4: three workers answer ping, with concurrency 4, 2, 2 and a log per process', async () => {
    const r = await tsq(['multi', 'start', ...startArgs()], env)
    assert.equal(r.code, 0, r.stdout + r.stderr + nodeLogs())
    assert.match(r.stdout, /> Starting nodes\.\.\./)
    for (const n of nodes) assert.match(r.stdout, new RegExp(`\\t> ${n}: OK`))
    assert.deepEqual(await concurrency(), expected)
    const short = nodes.map((n) => n.split('@')[0]!)
    for (const [i, s] of short.entries()) {
      assert.ok(existsSync(join(dir, `${s}.log`)), `${s}.log`)
      for (let p = 1; p <= (i === 0 ? 4 : 2); p++) assert.ok(existsSync(join(dir, `${s}-${p}.log`)), `${s}-${p}.log`)
    }
  })

  it('restart 3 without repeating options brings them back with the same concurrency', async () => {
    const before = pids()
    const r = await tsq(['multi', 'restart', ...nodeArgs, '--json'], env)
    assert.equal(r.code, 0, r.stdout + r.stderr + nodeLogs())
    const results = JSON.parse(r.stdout) as Array<{ node: string; status: string; pid: number }>
    assert.deepEqual(
      results.map((x) => [x.node, x.status]),
      nodes.map((n) => [n, 'OK']),
    )
    for (const pid of before) assert.equal(alive(pid), false, `old worker ${pid} is gone`)
    assert.deepEqual(await concurrency(), expected)
  })

  it('kill, then start works past the stale pidfiles', async () => {
    const killed = pids()
    const k = await tsq(['multi', 'kill', ...nodeArgs], env)
    assert.equal(k.code, 0, k.stderr)
    for (const pid of killed) assert.match(k.stdout, new RegExp(`KILL -> ${pid}`))
    await waitFor(() => killed.every((p) => !alive(p)), { timeoutMs: 10_000, what: 'killed workers to go' })
    const r = await tsq(['multi', 'start', ...startArgs()], env)
    assert.equal(r.code, 0, r.stdout + r.stderr + nodeLogs())
    assert.match(r.stderr, /stale pidfile .* is not running\): removed/)
    assert.deepEqual(await concurrency(), expected)
  })

  it('a pidfile holding an unrelated live process is neither signalled nor trusted', async () => {
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' })
    try {
      const other = mkdtempSync(join(dir, 'other-'))
      const pidfile = join(other, 'x1.pid')
      writeFileSync(pidfile, `${sleeper.pid}\n`)
      const s = await tsq(['multi', 'stopwait', 'x1', `--pidfile=${other}/%n.pid`, '--timeout', '5', '--json'], env)
      assert.equal(s.code, 0, s.stderr)
      assert.equal((JSON.parse(s.stdout) as Array<{ status: string }>)[0]!.status, 'NOT_SIGNALLED')
      assert.match(s.stderr, /not signalled/)
      assert.equal(sleeper.exitCode, null)
      assert.equal(sleeper.signalCode, null)
      assert.ok(alive(sleeper.pid!))
      assert.equal(existsSync(pidfile), false, 'the untrusted pidfile is replaced, not kept')
    } finally {
      sleeper.kill('SIGKILL')
    }
  })

  it('stopwait 3 leaves no worker process', async () => {
    const running = pids()
    const r = await tsq(['multi', 'stopwait', ...nodeArgs, '--timeout', '60'], env)
    assert.equal(r.code, 0, r.stdout + r.stderr + nodeLogs())
    for (const n of nodes) assert.match(r.stdout, new RegExp(`\\t> ${n}: OK`))
    for (const pid of running) assert.equal(alive(pid), false)
    await waitFor(() => workerPids(prefix).length === 0, { timeoutMs: 10_000, what: 'pool processes to exit' })
    const again = await tsq(['multi', 'stop', ...nodeArgs], env)
    for (const n of nodes) assert.match(again.stdout, new RegExp(`> ${n}: DOWN`))
  })
}

describe('tsq multi on the embedded broker', () => scenario('file'))

const amqpSkip = await brokerSkipReason('amqp')
describe('tsq multi on RabbitMQ', { skip: amqpSkip }, () => scenario('amqp'))

describe('tsq multi show/names/expand/get through the CLI', () => {
  it("prints spec §9's shapes with tsq's command", async () => {
    const env = { TSQ_HOME: join(tmpdir(), 'tsq-multi-unused') }
    const names = await tsq(['multi', 'names', '3', '--hostname=h.example.com'], env)
    assert.equal(names.stdout, 'celery1@h.example.com\ncelery2@h.example.com\ncelery3@h.example.com\n')
    const json = await tsq(['multi', 'names', 'w1', 'w2@%h', '--json'], env)
    assert.deepEqual(JSON.parse(json.stdout), ['w1@' + HOST, 'w2@' + HOST])
    const show = await tsq(
      ['multi', 'show', '3', '-c', '3', '-c:1', '10', '-A', 'tasks', '--pidfile=/r/%n.pid', '--logfile=/l/%n%I.log', '--nosplash'],
      env,
    )
    const lines = show.stdout.trim().split('\n')
    assert.equal(lines.length, 3)
    assert.equal(
      lines[0],
      `${process.execPath} ${RUN} worker --detach -A tasks -c 10 --pidfile=/r/celery1.pid --logfile=/l/celery1%I.log -n celery1@${HOST}`,
    )
    assert.match(lines[1]!, / -c 3 .* -n celery2@/)
    const expand = await tsq(['multi', 'expand', '%h|%n|%N|%d|%p|%i|%I|%%', '1', '--hostname=h.example.com'], env)
    assert.equal(expand.stdout, 'celery1@h.example.com|celery1|celery1|h.example.com|celery1@h.example.com|%i|%I|%%\n')
    const get = await tsq(['multi', 'get', 'w2@box', 'w1', 'w2', '-n', 'box', '-c:w2', '4'], env)
    assert.equal(
      get.stdout,
      `${RUN} worker --detach -c 4 -n w2@box --pidfile=${env.TSQ_HOME}/run/w2.pid --logfile=${env.TSQ_HOME}/log/w2%I.log\n`,
    )
    const missing = await tsq(['multi', 'get', 'nope@box', 'w1'], env)
    assert.equal(missing.code, 1)
    const bad = await tsq(['multi', 'frobnicate'], env)
    assert.equal(bad.code, 64)
  })

  it("knows the worker's boolean flags and Celery's aliases of them, so the word after one is a node", async () => {
    const env = { TSQ_HOME: join(tmpdir(), 'tsq-multi-unused') }
    const show = await tsq(['multi', 'show', '-A', 'tasks', '--discard', 'w1', '-B', 'w2', '--events', 'w3'], env)
    const lines = show.stdout.trim().split('\n')
    assert.deepEqual(
      lines.map((line) => / -n (\S+)/.exec(line)?.[1]),
      ['w1@' + HOST, 'w2@' + HOST, 'w3@' + HOST],
    )
    assert.ok(
      lines.every((line) => line.includes(' --discard -B --events ')),
      show.stdout,
    )
  })
})
