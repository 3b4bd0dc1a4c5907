// Celery's worker options around the process itself: -I/--include (more task
// modules, loaded in every pool process), -P processes (Celery's other name
// for prefork), --uid/--gid (drop root before anything is opened), --umask
// (the detached process's umask) and --executable (the node binary that runs
// the detached process, and multi's nodes), for `tsq worker` and `tsq beat`.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { REDIS_URL, requireBroker, uniqueName, waitFor } from '../helpers/brokers.js'
import { embeddedBrokerEnv, ROOT, runTsq, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import { worldReadableInstall, type WorldReadableInstall } from '../helpers/world-readable.js'
import { deleteCeleryQueues, deleteResults } from '../interop/helpers/cleanup.js'

const APP = 'test/fixtures/tasks/noop-tasks.js'
const INCLUDE = 'test/fixtures/tasks/included-tasks.js'
const running: SpawnedWorker[] = []
const detachedPids: number[] = []
after(async () => {
  for (const w of running.splice(0)) await w.stop('SIGKILL')
  for (const pid of detachedPids.splice(0)) killPid(pid)
})

let n = 0
function nodeName(): string {
  return `daemonopts${++n}-${process.pid}@testhost`
}

function killPid(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}

/** The pid a detached worker writes to its pidfile, once it has. */
function detachedPid(pidfile: string): Promise<number> {
  return waitFor(
    () => {
      try {
        return Number.parseInt(readFileSync(pidfile, 'utf8'), 10) || null
      } catch {
        return null
      }
    },
    { timeoutMs: 20_000, what: "the detached worker's pidfile" },
  )
}

type IncludedResult = { doubled: number; pid: number; uid: number; gid: number }

/** `connection`: -b and --result-backend, for both commands; `queue`: where to send. */
async function callAndWait(
  env: NodeJS.ProcessEnv,
  connection: string[] = [],
  queue?: string,
): Promise<{ id: string; status: string; result: IncludedResult }> {
  const sent = await runTsq(['call', 'proj.included', '--args', '[21]', ...connection, ...(queue ? ['-Q', queue] : [])], { env })
  assert.equal(sent.code, 0, sent.stderr)
  const id = sent.stdout.trim()
  const r = await runTsq(['result', id, '-t', '30', '--json', ...connection], { env })
  assert.equal(r.code, 0, r.stderr)
  return { id, ...(JSON.parse(r.stdout) as { status: string; result: IncludedResult }) }
}

/** The ids of a /proc status line (Uid, Gid: real, effective, saved, filesystem). */
function procIds(pid: number, field: 'Uid' | 'Gid' | 'Groups'): number[] {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`))!
  return line.split(/\s+/).slice(1).filter(Boolean).map(Number)
}

describe('[worker -I, -P processes] included modules in every pool process', () => {
  it(
    'a task registered by an included module runs in a prefork child; the banner and conf name both modules',
    { timeout: 60_000 },
    async () => {
      const env = embeddedBrokerEnv(tempTsqHome())
      const worker = await startWorker(
        ['-A', APP, '-I', INCLUDE, '-P', 'processes', '-c', '1', '-l', 'INFO', '--without-mingle', '--without-gossip'],
        { env, nodename: nodeName() },
      )
      running.push(worker)
      assert.match(worker.output(), /concurrency: 1 \(prefork\)/)
      assert.match(worker.output(), /\. proj\.included/)
      const { status, result } = await callAndWait(env)
      assert.equal(status, 'SUCCESS')
      assert.equal(result.doubled, 42)
      assert.notEqual(result.pid, worker.child.pid, 'ran in a pool process, which loaded the include itself')
      const conf = await runTsq(['inspect', 'conf', '-d', worker.nodename, '--json'], { env })
      assert.equal(conf.code, 0, conf.stderr)
      const include = (JSON.parse(conf.stdout) as Record<string, { include: string[] }>)[worker.nodename]!.include
      assert.deepEqual(include, [join(ROOT, APP), join(ROOT, INCLUDE)])
      assert.equal(await worker.stop('SIGTERM'), 0, worker.output())
    },
  )

  it('an include that cannot be found is one line and exit 64, before anything starts', async () => {
    const env = embeddedBrokerEnv(tempTsqHome())
    const r = await runTsq(['worker', '-A', APP, '-I', `${INCLUDE},./no-such-module`, '-P', 'solo', '-n', nodeName()], { env })
    assert.equal(r.code, 64, r.stderr)
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
    assert.match(r.stderr, /cannot find the included module "\.\/no-such-module"/)
  })
})

describe('[--uid --gid --umask] privileges and the detached umask', () => {
  it('--umask with --detach: the log file and the pidfile the detached worker makes get it', { timeout: 60_000 }, async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home)
    const node = nodeName()
    const pidfile = join(home, 'w.pid')
    const logfile = join(home, 'w.log')
    const r = await runTsq(
      [
        'worker',
        '-D',
        '--umask',
        '077',
        '-A',
        APP,
        '-P',
        'solo',
        '-c',
        '1',
        '-l',
        'INFO',
        '-n',
        node,
        '--pidfile',
        pidfile,
        '--logfile',
        logfile,
      ],
      { env },
    )
    assert.equal(r.code, 0, r.stderr)
    const pid = await detachedPid(pidfile)
    detachedPids.push(pid)
    assert.equal(statSync(pidfile).mode & 0o777, 0o600)
    assert.equal(statSync(logfile).mode & 0o777, 0o600)
    killPid(pid, 'SIGTERM')
  })

  it(
    '--executable with --detach: the detached worker runs under that binary (here a wrapper that execs node)',
    { timeout: 60_000 },
    async () => {
      const home = tempTsqHome()
      const env = embeddedBrokerEnv(home)
      const node = nodeName()
      const pidfile = join(home, 'w.pid')
      const marker = join(home, 'wrapper-ran')
      const wrapper = join(home, 'node-wrapper.sh')
      writeFileSync(wrapper, `#!/bin/sh\necho "$@" > '${marker}'\nexec '${process.execPath}' "$@"\n`)
      chmodSync(wrapper, 0o755)
      const r = await runTsq(
        [
          'worker',
          '-D',
          '--executable',
          wrapper,
          '-A',
          APP,
          '-P',
          'solo',
          '-c',
          '1',
          '-n',
          node,
          '--pidfile',
          pidfile,
          '--logfile',
          join(home, 'w.log'),
        ],
        { env },
      )
      assert.equal(r.code, 0, r.stderr)
      const pid = await detachedPid(pidfile)
      detachedPids.push(pid)
      assert.ok(existsSync(marker), 'the wrapper started the detached worker')
      assert.match(readFileSync(marker, 'utf8'), / worker .*-n daemonopts/)
      // exec: the wrapper's process became node, so the pidfile names the worker itself.
      assert.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), /node/)
      killPid(pid, 'SIGTERM')
    },
  )

  it("multi: --executable is the binary each node runs under, and is passed on, as Celery's multi does", async () => {
    const r = await runTsq(['multi', 'show', '2', '-A', APP, '--executable=/usr/local/bin/node-custom', '--json'], {
      env: embeddedBrokerEnv(tempTsqHome()),
    })
    assert.equal(r.code, 0, r.stderr)
    const plans = JSON.parse(r.stdout) as Array<{ argv: string[] }>
    assert.equal(plans.length, 2)
    for (const plan of plans) {
      assert.equal(plan.argv[0], '/usr/local/bin/node-custom')
      assert.ok(plan.argv.includes('--executable=/usr/local/bin/node-custom'), plan.argv.join(' '))
    }
  })

  it('a --umask that is not a mask, and a --uid or --gid that does not exist, are one line and exit 64 (worker and beat, detached or not)', async () => {
    const env = embeddedBrokerEnv(tempTsqHome())
    const cases: Array<[string[], RegExp]> = [
      [['worker', '-A', APP, '-D', '--umask', '0999'], /--umask must be a mask/],
      [['worker', '-A', APP, '--uid', 'no-such-user-tsq'], /--uid: user does not exist: no-such-user-tsq/],
      [['worker', '-A', APP, '-D', '--gid', 'no-such-group-tsq'], /--gid: group does not exist: no-such-group-tsq/],
      [['beat', '--uid', 'no-such-user-tsq'], /--uid: user does not exist/],
      [['beat', '-D', '--umask', 'x'], /--umask must be a mask/],
      [['worker', '-A', APP, '-D', '--executable', '/no/such/node'], /--executable "\/no\/such\/node" is not an executable file/],
      [['beat', '-D', '--executable', ROOT], /--executable ".*" is not an executable file/],
    ]
    for (const [args, message] of cases) {
      const r = await runTsq(args, { env })
      assert.equal(r.code, 64, `${args.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
      assert.match(r.stderr, message)
    }
  })

  const notRoot = process.getuid?.() !== 0 ? 'changing the user needs root: skipping the --uid/--gid tests' : false
  if (notRoot) process.stderr.write(`SKIP: ${notRoot}\n`)

  // A process that has become nobody runs tsq and the task modules from a copy
  // it can read: the repo may be in a folder only root can enter (a clone in
  // root's home or in `mktemp -d`).
  let install: WorldReadableInstall | undefined
  const asNobody = () => (install ??= worldReadableInstall([APP, INCLUDE]))
  after(() => install?.remove())

  it(
    "--uid nobody: the worker and its pool processes run as nobody with nobody's groups, and serve tasks",
    { timeout: 60_000, skip: notRoot },
    async (t) => {
      if (!(await requireBroker(t, 'redis'))) return
      const queue = uniqueName('tsq-uid')
      const env = embeddedBrokerEnv(tempTsqHome())
      const backend = REDIS_URL.replace(/\/0$/, '/1')
      const ids: string[] = []
      try {
        const copy = asNobody()
        const worker = await startWorker(
          [
            '-A',
            copy.path(APP),
            '-I',
            copy.path(INCLUDE),
            '-b',
            REDIS_URL,
            '--result-backend',
            backend,
            '-Q',
            queue,
            '-P',
            'prefork',
            '-c',
            '1',
            '--uid',
            'nobody',
            '-l',
            'INFO',
            '--without-mingle',
            '--without-gossip',
          ],
          { env, nodename: nodeName(), bin: copy.bin, cwd: copy.root },
        )
        running.push(worker)
        assert.deepEqual(procIds(worker.child.pid!, 'Uid'), [65534, 65534, 65534, 65534])
        assert.deepEqual(procIds(worker.child.pid!, 'Gid'), [65534, 65534, 65534, 65534], "the user's primary group")
        assert.deepEqual(procIds(worker.child.pid!, 'Groups'), [65534], "the user's groups, not root's")
        const { id, status, result } = await callAndWait(env, ['-b', REDIS_URL, '--result-backend', backend], queue)
        ids.push(id)
        assert.equal(status, 'SUCCESS')
        assert.deepEqual([result.uid, result.gid], [65534, 65534], 'the pool process inherited the dropped ids')
        assert.equal(await worker.stop('SIGTERM'), 0, worker.output())
      } finally {
        await deleteCeleryQueues('redis', REDIS_URL, [queue])
        await deleteResults(backend, ids)
      }
    },
  )

  it(
    '--gid alone changes only the group; --uid as a user who is not root is refused with exit 1',
    { timeout: 60_000, skip: notRoot },
    async () => {
      const env = embeddedBrokerEnv(tempTsqHome())
      const worker = await startWorker(
        ['-A', APP, '-P', 'solo', '--gid', 'nogroup', '-l', 'INFO', '--without-mingle', '--without-gossip'],
        { env, nodename: nodeName() },
      )
      running.push(worker)
      assert.deepEqual(procIds(worker.child.pid!, 'Uid'), [0, 0, 0, 0])
      assert.deepEqual(procIds(worker.child.pid!, 'Gid'), [65534, 65534, 65534, 65534])
      assert.equal(await worker.stop('SIGTERM'), 0, worker.output())

      // As nobody (spawned with its ids), asking to become root fails as Celery's SecurityError does.
      const copy = asNobody()
      const nobody = spawn(process.execPath, [copy.bin, 'worker', '-A', copy.path(APP), '-P', 'solo', '--uid', 'root'], {
        cwd: copy.root,
        env: { ...process.env, ...env, HOME: '/' },
        uid: 65534,
        gid: 65534,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stderr = ''
      nobody.stderr.on('data', (d) => (stderr += d))
      const code = await new Promise<number | null>((resolve) => nobody.once('exit', resolve))
      assert.equal(code, 1, stderr)
      assert.equal(stderr.trim().split('\n').length, 1, stderr)
      assert.match(stderr, /cannot run as user root: only root can change it/)
    },
  )
})
