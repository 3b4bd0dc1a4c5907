// Celery's own command lines: the global options (-A, -b, --result-backend,
// --workdir, --config, -C, -q) before the command name as well as after it,
// and -A on the client commands taking the broker, backend, default queue and
// task_routes from the app. Each command line runs under tsq and under
// `python3 -m celery` (5.2.6) in the same order, against a tsq worker and a
// Python worker that both start from `<cli> -A <module> worker`; a flag's bad
// value is one line in click's words, as Celery prints it.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import amqplib from '../../src/transport/amqp/amqplib.js'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { ROOT, tempTsqHome } from '../helpers/cli.js'
import { GroupProcess, sleep } from '../helpers/process-group.js'
import { deleteCeleryQueues, deleteResults } from '../interop/helpers/cleanup.js'
import { PY_DIR, PYTHON, run, TSQ_BIN, type RunResult } from '../interop/helpers/python-worker.js'

const TSQ_APP = 'test/fixtures/tasks/global-options-tasks.js'
const PY_APP = 'global_options_app'
const BACKEND = REDIS_URL.replace(/\/0$/, '/1')

const skip = (await brokerSkipReason('amqp')) || (await brokerSkipReason('redis'))

const queue = uniqueName('tsq-globalopts')
const routedQueue = `${queue}-routed`
const tsqNode = `globalopts-tsq-${process.pid}@${hostname()}`
const pyNode = `globalopts-py-${process.pid}@${hostname()}`
const home = tempTsqHome()

/**
 * Both CLIs find the broker and backend in the app only: nothing in the
 * environment names them (a developer's shell may).
 */
function cliEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const key of [
    'TSQ_BROKER_URL',
    'CELERY_BROKER_URL',
    'TSQ_RESULT_BACKEND',
    'CELERY_RESULT_BACKEND',
    'TSQ_CONFIG_MODULE',
    'CELERY_CONFIG_MODULE',
  ])
    delete env[key]
  return {
    ...env,
    TSQ_HOME: home,
    NO_COLOR: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    TSQ_GO_BROKER: AMQP_URL,
    TSQ_GO_BACKEND: BACKEND,
    TSQ_GO_QUEUE: queue,
    TSQ_GO_ROUTED_QUEUE: routedQueue,
    ...extra,
  }
}

function tsq(args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<RunResult> {
  return run(process.execPath, [TSQ_BIN, ...args], { cwd: opts.cwd ?? ROOT, env: cliEnv(opts.env), timeoutMs: 60_000 })
}

/** `python3 -m celery <args>`, from test/interop/py unless told (where `-A global_options_app` is found). */
function celery(args: readonly string[], opts: { cwd?: string } = {}): Promise<RunResult> {
  return run(PYTHON, ['-m', 'celery', ...args], { cwd: opts.cwd ?? PY_DIR, env: cliEnv(), timeoutMs: 60_000 })
}

const lastLine = (text: string) => text.trim().split('\n').at(-1) ?? ''

/** Starts `<cli> -A <module> worker ...` in its own process group and waits for "<node> ready.". */
async function startWorker(argv: string[], cwd: string, node: string): Promise<GroupProcess> {
  const child = spawn(argv[0]!, argv.slice(1), { cwd, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const worker = new GroupProcess(child)
  const deadline = Date.now() + 60_000
  while (!worker.log.includes(`${node} ready.`)) {
    if (worker.hasExited) throw new Error(`${argv.join(' ')} exited during start-up:\n${worker.logTail()}`)
    if (Date.now() > deadline) {
      await stop(worker)
      throw new Error(`${argv.join(' ')} was not ready in time:\n${worker.logTail()}`)
    }
    await sleep(100)
  }
  return worker
}

function stop(worker: GroupProcess | undefined): Promise<void> {
  return worker?.stopWith(() => process.kill(-worker.pid, 'SIGTERM'), 15_000) ?? Promise.resolve()
}

describe('[global options] the same command lines under tsq and python3 -m celery', { skip }, () => {
  let tsqWorker: GroupProcess | undefined
  let pyWorker: GroupProcess | undefined
  const taskIds: string[] = []

  before(async () => {
    // The global options before `worker`, no -b: the broker and queue come from the app.
    ;[tsqWorker, pyWorker] = await Promise.all([
      startWorker(
        [
          process.execPath,
          TSQ_BIN,
          '-A',
          TSQ_APP,
          'worker',
          '-P',
          'solo',
          '-n',
          tsqNode,
          '-l',
          'INFO',
          '--without-mingle',
          '--without-gossip',
        ],
        ROOT,
        tsqNode,
      ),
      startWorker(
        [PYTHON, '-m', 'celery', '-A', PY_APP, 'worker', '-P', 'solo', '-n', pyNode, '-l', 'INFO', '--without-mingle', '--without-gossip'],
        PY_DIR,
        pyNode,
      ),
    ])
  })

  after(async () => {
    await Promise.all([stop(tsqWorker), stop(pyWorker)])
    await deleteCeleryQueues('amqp', AMQP_URL, [queue, routedQueue])
    await deleteResults(BACKEND, taskIds)
  })

  it('`<cli> -A <module> worker`: both workers take the broker, the result backend and the default queue from the app', () => {
    for (const worker of [tsqWorker!, pyWorker!]) {
      assert.ok(worker.log.includes(`.> transport:   ${AMQP_URL.replace(/:[^:@/]*@/, ':**@')}`), worker.logTail())
      assert.ok(worker.log.includes(`.> results:     ${BACKEND}`), worker.logTail())
      assert.ok(worker.log.includes(`.> ${queue} exchange=${queue}(direct) key=${queue}`), worker.logTail())
    }
  })

  it('`<cli> -b <url> inspect ping`: each worker answers both CLIs, in the same lines; nobody answering is 69 for both', async () => {
    for (const node of [tsqNode, pyNode]) {
      const args = ['-b', AMQP_URL, 'inspect', 'ping', '-d', node, '-t', '10']
      const [ours, theirs, oclif] = await Promise.all([
        tsq(args, { env: { TSQ_NO_TRICKS: '', TSQ_NO_FAST_PATH: '' } }),
        celery(args, { cwd: ROOT }),
        tsq(args, { env: { TSQ_NO_FAST_PATH: '1' } }),
      ])
      assert.equal(theirs.code, 0, theirs.stderr)
      assert.equal(ours.code, 0, ours.stderr)
      assert.equal(ours.stdout, theirs.stdout)
      assert.match(ours.stdout, new RegExp(`^->  ${node.replace(/[.]/g, '\\.')}: OK\\n        pong\\n`))
      // bin/run.js's fast path and oclif read the moved options alike.
      assert.equal(oclif.code, 0, oclif.stderr)
      assert.equal(oclif.stdout, ours.stdout)
    }
    const nobody = ['-b', AMQP_URL, 'inspect', 'ping', '-d', `nobody-${process.pid}@nowhere`, '-t', '0.5']
    const [ours, theirs] = await Promise.all([tsq(nobody), celery(nobody, { cwd: ROOT })])
    assert.equal(theirs.code, 69, theirs.stderr)
    assert.equal(ours.code, 69, ours.stderr)
    // Celery's line, then the broker tsq asked (password masked), which Celery's line leaves out.
    assert.equal(lastLine(ours.stderr), `${lastLine(theirs.stderr)} (asked ${AMQP_URL.replace(/:[^:@/]*@/, ':**@')})`)
  })

  it("`<cli> -A <module> inspect ping` (also with --workdir): the broker comes from the app's conf", async () => {
    for (const node of [tsqNode, pyNode]) {
      const [ours, theirs] = await Promise.all([
        tsq(['-A', TSQ_APP, 'inspect', 'ping', '-d', node, '-t', '10']),
        celery(['-A', PY_APP, 'inspect', 'ping', '-d', node, '-t', '10']),
      ])
      assert.equal(theirs.code, 0, theirs.stderr)
      assert.equal(ours.code, 0, ours.stderr)
      assert.equal(ours.stdout, theirs.stdout)
      const [oursIn, theirsIn] = await Promise.all([
        tsq(['--workdir', 'test/fixtures/tasks', '-A', 'global-options-tasks.js', 'inspect', 'ping', '-d', node, '-t', '10']),
        celery(['--workdir', 'test/interop/py', '-A', PY_APP, 'inspect', 'ping', '-d', node, '-t', '10'], { cwd: ROOT }),
      ])
      assert.equal(theirsIn.code, 0, theirsIn.stderr)
      assert.equal(oursIn.code, 0, oursIn.stderr)
      assert.equal(oursIn.stdout, ours.stdout)
    }
    // After the command name too; and without -A the app's broker is not used (tsq's default is the embedded one).
    const after = await tsq(['inspect', 'ping', '-A', TSQ_APP, '-d', tsqNode, '-t', '10'])
    assert.equal(after.code, 0, after.stderr)
    const without = await tsq(['inspect', 'ping', '-d', tsqNode, '-t', '0.5'])
    assert.equal(without.code, 69, without.stderr)
  })

  it("`<cli> -A <module> call` and `result`: the app's default queue, task_routes and result backend", async () => {
    const oursId = await tsq(['-A', TSQ_APP, 'call', 'proj.add', '--args', '[2, 3]'])
    const theirsId = await celery(['-A', PY_APP, 'call', 'proj.add', '--args', '[2, 3]'])
    assert.equal(oursId.code, 0, oursId.stderr)
    assert.equal(theirsId.code, 0, theirsId.stderr)
    const ids = [oursId.stdout.trim(), theirsId.stdout.trim()]
    taskIds.push(...ids)
    for (const id of ids) {
      const [ours, theirs] = await Promise.all([tsq(['-A', TSQ_APP, 'result', id, '-t', '30']), celery(['-A', PY_APP, 'result', id])])
      assert.equal(theirs.code, 0, theirs.stderr)
      assert.equal(ours.code, 0, ours.stderr)
      assert.equal(ours.stdout, theirs.stdout)
      assert.equal(ours.stdout.trim(), '5')
    }
    // proj.routed's route names a queue no worker here consumes: both sends wait there.
    const routed = await Promise.all([tsq(['-A', TSQ_APP, 'call', 'proj.routed']), celery(['-A', PY_APP, 'call', 'proj.routed'])])
    for (const r of routed) assert.equal(r.code, 0, r.stderr)
    const conn = await amqplib.connect(AMQP_URL)
    try {
      const ch = await conn.createChannel()
      assert.equal((await ch.checkQueue(routedQueue)).messageCount, 2)
      await ch.close()
    } finally {
      await conn.close()
    }
  })

  it('-q and -C before the command: no colour, and -q leaves the count out', async () => {
    const args = ['-C', '-q', '-A', 'APP', 'status', '-d', tsqNode, '-t', '10']
    const [ours, theirs] = await Promise.all([
      tsq(args.map((a) => (a === 'APP' ? TSQ_APP : a))),
      celery(args.map((a) => (a === 'APP' ? PY_APP : a))),
    ])
    assert.equal(theirs.code, 0, theirs.stderr)
    assert.equal(ours.code, 0, ours.stderr)
    // eslint-disable-next-line no-control-regex -- matches the terminal escape (ESC) it strips
    for (const r of [ours, theirs]) assert.doesNotMatch(r.stdout, /\x1b\[/)
    assert.ok(ours.stdout.includes(tsqNode), ours.stdout)
    // Celery 5.2.6's status prints the count whatever -q says (it looks for `quiet` among its own options); tsq's -q leaves it out.
    assert.doesNotMatch(ours.stdout, /node online/)
  })
})

describe('[global options] where no broker is needed', () => {
  it("`tsq -A <module> multi show` passes -A on to every node, as Celery's multi does", async () => {
    const r = await tsq(['-A', TSQ_APP, 'multi', 'show', '2', '--json'])
    assert.equal(r.code, 0, r.stderr)
    const plans = JSON.parse(r.stdout) as Array<{ argv: string[] }>
    assert.equal(plans.length, 2)
    for (const plan of plans) assert.equal(plan.argv[plan.argv.indexOf('-A') + 1], TSQ_APP, plan.argv.join(' '))
  })

  it('--config: a settings module below the app, here naming the broker for a client command', async () => {
    const dir = tempTsqHome()
    const config = join(dir, 'celeryconfig.json')
    writeFileSync(config, JSON.stringify({ broker_url: 'amqq://127.0.0.1//' }))
    // The broker it names is what the command uses: a bad scheme is reported as for -b.
    const r = await tsq(['--config', config, 'status'])
    assert.equal(r.code, 64, r.stderr)
    assert.match(r.stderr, /no such transport: amqq/)
    const missing = await tsq(['--config', join(dir, 'nope.json'), 'status'])
    assert.equal(missing.code, 64)
    assert.match(missing.stderr, /^Error: cannot find the config module .*nope\.json/)
  })
})

describe("[flag errors] one line naming the flag, the value and what was expected (exit 64), in Celery's words", () => {
  // Each: the tsq line, and Celery's line for it (the same words) unless tsq's flag has no Celery twin.
  const cases: Array<{ tsq: string[]; celery?: string[]; line: string }> = [
    {
      tsq: ['-A', TSQ_APP, 'worker', '-c', 'abc'],
      celery: ['-A', PY_APP, 'worker', '-c', 'abc'],
      line: "Invalid value for '-c' / '--concurrency': 'abc' is not a valid integer.",
    },
    {
      tsq: ['worker', '-A', TSQ_APP, '--concurrency', 'abc'],
      celery: ['-A', PY_APP, 'worker', '--concurrency', 'abc'],
      line: "Invalid value for '-c' / '--concurrency': 'abc' is not a valid integer.",
    },
    {
      tsq: ['-A', TSQ_APP, 'worker', '--time-limit', 'x'],
      celery: ['-A', PY_APP, 'worker', '--time-limit', 'x'],
      line: "Invalid value for '--time-limit': 'x' is not a valid float.",
    },
    {
      tsq: ['-A', TSQ_APP, 'worker', '--max-tasks-per-child', 'abc'],
      celery: ['-A', PY_APP, 'worker', '--max-tasks-per-child', 'abc'],
      line: "Invalid value for '--max-tasks-per-child': 'abc' is not a valid integer.",
    },
    {
      tsq: ['inspect', 'ping', '-t', 'x'],
      celery: ['inspect', 'ping', '-t', 'x'],
      line: "Invalid value for '-t' / '--timeout': 'x' is not a valid float.",
    },
    {
      tsq: ['call', 'proj.add', '--countdown', 'x'],
      celery: ['call', 'proj.add', '--countdown', 'x'],
      line: "Invalid value for '--countdown': 'x' is not a valid float.",
    },
    {
      tsq: ['call', 'proj.add', '--args', '{}'],
      celery: ['call', 'proj.add', '--args', '{}'],
      line: "Invalid value for '-a' / '--args': {} was not an array",
    },
    // Before the command name, where bin/run.js reads the line.
    { tsq: ['-A'], celery: ['-A'], line: "Option '-A' requires an argument." },
    { tsq: ['--bogus', 'worker'], celery: ['--bogus', 'worker'], line: 'No such option: --bogus' },
    {
      tsq: ['-A', TSQ_APP, 'worker', '-P', 'bogus'],
      line: "Invalid value for '-P' / '--pool': 'bogus' is not one of 'prefork', 'threads', 'solo', 'processes'.",
    },
    { tsq: ['-A', TSQ_APP, 'worker', '-c', '0'], line: "Invalid value for '-c' / '--concurrency': 0 is not in the range x>=1." },
    { tsq: ['inspect', 'ping', '--limit', 'many'], line: "Invalid value for '--limit': 'many' is not a valid integer." },
    {
      tsq: ['inspect', 'ping', '--matcher', 'regex', '--pattern', 'x'],
      line: "Invalid value for '--matcher': 'regex' is not one of 'glob', 'pcre'.",
    },
    { tsq: ['call', 'proj.add', '--priority', '256'], line: "Invalid value for '--priority': 256 is not in the range 0<=x<=255." },
    { tsq: ['result', 'abc', '-t', 'soon'], line: "Invalid value for '-t' / '--timeout': 'soon' is not a valid float." },
    // oclif's own usage errors, as one line that says what is missing and where help is
    // (`tsq worker` with no -A is no error: it runs the default app, as `celery worker` does).
    { tsq: ['inspect'], line: "Missing required argument: method (try 'tsq inspect --help')" },
    {
      tsq: ['control', 'revoke', 'abc', '--signal', 'KILL'],
      line: "All of the following must be provided when using --signal: --terminate (try 'tsq control --help')",
    },
    { tsq: ['beat', '--ha', 'both'], line: "Invalid value for '--ha': 'both' is not one of 'lease', 'mutex', 'none'." },
  ]
  for (const c of cases) {
    it(`tsq ${c.tsq.join(' ')}`, async () => {
      const ours = await tsq(c.tsq)
      assert.equal(ours.code, 64, ours.stderr)
      assert.equal(ours.stderr, `Error: ${c.line}\n`)
      if (!c.celery) return
      const theirs = await celery(c.celery)
      assert.equal(lastLine(theirs.stderr), `Error: ${c.line}`, theirs.stderr)
    })
  }
})
