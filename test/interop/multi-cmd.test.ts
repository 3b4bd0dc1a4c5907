// `tsq multi --cmd`, as Celery's multi --cmd: the command each node runs. With
// `--executable=python3 --cmd="-m celery worker --detach"` tsq multi starts,
// pings and stops Python Celery 5.2.6 workers, with the global options put
// where Celery's multi puts them (right after `celery`).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { PY_DIR, PYTHON, TSQ_BIN } from './helpers/python-worker.js'

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function tsqMulti(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<Run> {
  return new Promise((done, fail) => {
    // From the Python app's directory, as an operator's script would run it: the nodes start there.
    const child = spawn(process.execPath, [TSQ_BIN, 'multi', ...args], {
      cwd: PY_DIR,
      env: { ...process.env, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      fail(new Error(`tsq multi ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`))
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
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')
  } catch {
    return false
  }
}

const amqpSkip = await brokerSkipReason('amqp')
const broker = amqpSkip ? REDIS_URL : AMQP_URL
const kind = amqpSkip ? ('redis' as const) : ('amqp' as const)
const skip = amqpSkip && (await brokerSkipReason('redis'))

describe("tsq multi --cmd runs the given command for each node: Python Celery's worker", { skip }, () => {
  const home = mkdtempSync(join(tmpdir(), 'tsq-multi-cmd-'))
  const prefix = uniqueName('pycmd').replace(/-/g, '')
  const node = `${prefix}1@${hostname()}`
  const queue = uniqueName('tsq-multi-cmd-q')
  const env = { TSQ_HOME: home, PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1', PARITY_BACKEND: 'redis://127.0.0.1:6379/1' }
  const nodeArgs = ['1', `--range-prefix=${prefix}`]
  const workerArgs = [
    `--executable=${PYTHON}`,
    '--cmd=-m celery worker --detach',
    '-A',
    'parity_app',
    '-b',
    broker,
    '-Q',
    queue,
    '-c',
    '1',
    '--without-gossip',
    '--without-mingle',
  ]
  let pid: number | null = null

  after(async () => {
    // Whatever the assertions said, no node outlives the test: its own pid only.
    if (pid !== null && alive(pid)) process.kill(pid, 'SIGKILL')
    await deleteCeleryQueues(kind, broker, [queue])
    rmSync(home, { recursive: true, force: true })
  })

  it("start: the node is Python's `celery -b URL -A parity_app worker`, and it answers ping", async () => {
    const res = await tsqMulti(['start', ...nodeArgs, ...workerArgs, '--timeout', '60'], env)
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`)
    assert.match(res.stdout, new RegExp(`> ${node}: OK`), res.stdout)
    pid = Number(readFileSync(join(home, 'run', `${prefix}1.pid`), 'utf8').trim())
    assert.ok(alive(pid), `pid ${pid} from the pidfile is alive`)
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean)
    const celery = argv.indexOf('celery')
    assert.deepEqual(argv.slice(celery - 1, celery + 6), ['-m', 'celery', '-b', broker, '-A', 'parity_app', 'worker'], argv.join(' '))
    assert.ok(argv.includes(`-n`) && argv[argv.indexOf('-n') + 1] === node, argv.join(' '))
  })

  it("stopwait knows the node's worker (Python's) by its pidfile, stops it and waits for it", async () => {
    assert.ok(pid !== null, 'started')
    const res = await tsqMulti(['stopwait', ...nodeArgs, '--timeout', '60'], env)
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`)
    assert.match(res.stdout, new RegExp(`${node}: TERM -> ${pid}`), res.stdout)
    assert.equal(alive(pid!), false, 'the worker is gone')
  })
})
