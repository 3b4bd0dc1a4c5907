// The file:// broker and result store seen from the command line: a chord
// whose group id is `..` completes and deletes no result (before, its folder
// was results/ itself, removed with every result in it); a worker
// given a broker or result folder others can write to stops with one line
// (before, `nobody` could drop a task into it for a root worker); on a full
// disk (a small tmpfs) a worker tries a result write again, then logs the lost
// result, leaving no partial file; `tsq result` without -t then says what it
// waits for instead of hanging in silence, and a store it may not use fails at once.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createApp, signature } from '../../src/index.js'
import { BIN, ROOT, callTask, embeddedBrokerEnv, runTsq, startWorker, taskResult, tempTsqHome } from '../helpers/cli.js'

const TASKS = join(ROOT, 'test/fixtures/tasks/interop-tasks.js')
const isRoot = process.getuid?.() === 0

describe('[file://] a chord whose group id is `..`', () => {
  it('runs its body and deletes no stored result', { timeout: 60_000 }, async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home)
    const url = `file://${join(home, 'broker')}`
    const worker = await startWorker(
      ['-A', TASKS, '-b', url, '--result-backend', url, '-P', 'solo', '-l', 'INFO', '--without-mingle', '--without-gossip'],
      { env, nodename: `dotdot-${process.pid}@${hostname()}` },
    )
    const app = createApp({ name: 'proj', broker: url, resultBackend: url })
    try {
      const kept = await callTask(env, 'proj.add', [20, 22], ['-b', url, '--result-backend', url])
      assert.equal((await taskResult(env, kept)).result, 42)
      const add = (...args: number[]) => signature('proj.add', args)
      const header = {
        task: 'celery.group',
        args: [],
        kwargs: { tasks: [add(1), add(2)] },
        options: { task_id: '..' },
        subtask_type: 'group',
        immutable: false,
      }
      const bodyId = `dotdot-body-${process.pid}`
      const chordStep = {
        task: 'celery.chord',
        args: [],
        kwargs: { kwargs: {}, header, body: signature('proj.tsum', [], {}, { task_id: bodyId }) },
        options: {},
        subtask_type: 'chord',
        immutable: false,
      }
      await app.chain(add(1, 2), chordStep as unknown as ReturnType<typeof signature>)
      assert.equal(await app.asyncResult(bodyId).get({ timeout: 30 }), 9, worker.output().slice(-3000))
      const after = await runTsq(['result', kept, '-t', '5', '--result-backend', url], { env })
      assert.equal(after.stdout.trim(), '42', `the stored result survived the chord: ${after.stderr}`)
      assert.deepEqual(readdirSync(join(home, 'broker', 'results', 'chords')), [], "the chord's own folder went when it completed")
    } finally {
      await app.close()
      await worker.stop()
    }
  })
})

describe('[file://] unsafe folders stop a worker with one line', () => {
  it('a world-writable broker folder, and a world-writable result folder', async () => {
    const home = tempTsqHome()
    const broker = join(home, 'broker')
    mkdirSync(broker)
    chmodSync(broker, 0o777)
    const env = embeddedBrokerEnv(home)
    const r = await runTsq(['worker', '-A', TASKS, '-b', `file://${broker}`, '-P', 'solo', '-n', `unsafe-${process.pid}@${hostname()}`], {
      env,
      timeoutMs: 30_000,
    })
    assert.notEqual(r.code, 0)
    assert.deepEqual(r.stderr.trim().split('\n'), [
      `Error: file:// broker folder ${broker} is writable by others (mode 0777): refusing to use it; chmod 700 it or choose another folder`,
    ])
    assert.deepEqual(readdirSync(broker), [], 'nothing read or written there')

    chmodSync(broker, 0o700)
    const results = join(home, 'results')
    mkdirSync(results)
    chmodSync(results, 0o777)
    const r2 = await runTsq(
      [
        'worker',
        '-A',
        TASKS,
        '-b',
        `file://${broker}`,
        '--result-backend',
        `file://${results}`,
        '-P',
        'solo',
        '-n',
        `unsafe2-${process.pid}@${hostname()}`,
      ],
      { env, timeoutMs: 30_000 },
    )
    assert.notEqual(r2.code, 0)
    assert.deepEqual(r2.stderr.trim().split('\n'), [
      `Error: file:// result store ${results} is writable by others (mode 0777): refusing to use it; chmod 700 it or choose another folder`,
    ])
  })

  it('`tsq result` on a store another user owns fails at once', { skip: isRoot ? false : 'chown needs root' }, async () => {
    const home = tempTsqHome()
    const store = join(home, 'store')
    mkdirSync(store, { mode: 0o755 })
    chownSync(store, 65534, 65534)
    const r = await runTsq(['result', 'some-id', '--result-backend', `file://${store}`], {
      env: embeddedBrokerEnv(home),
      timeoutMs: 20_000,
    })
    assert.notEqual(r.code, 0)
    assert.match(
      r.stderr.trim(),
      /^Error: file:\/\/ result store .* is owned by uid 65534, not by this user \(uid 0\): refusing to use it; chown it or choose another folder$/,
    )
  })
})

describe('[file://] a result on a full disk', () => {
  const home = tempTsqHome()
  const disk = join(home, 'disk')
  mkdirSync(disk)
  const mounted = isRoot && spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k,mode=0700', 'tmpfs', disk]).status === 0
  after(() => {
    if (mounted) spawnSync('umount', [disk])
  })

  it(
    'is tried again, then logged as lost with no partial file; `tsq result` without -t says it is still waiting',
    { skip: mounted ? false : 'needs root and `mount -t tmpfs`', timeout: 90_000 },
    async () => {
      const env = embeddedBrokerEnv(home)
      const broker = `file://${join(home, 'broker')}`
      const results = `file://${disk}`
      const worker = await startWorker(
        ['-A', TASKS, '-b', broker, '--result-backend', results, '-P', 'solo', '-l', 'INFO', '--without-mingle', '--without-gossip'],
        { env, nodename: `fulldisk-${process.pid}@${hostname()}` },
      )
      try {
        try {
          writeFileSync(join(disk, 'filler'), Buffer.alloc(16 << 20))
        } catch (error) {
          assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC')
        }
        const id = await callTask(env, 'proj.add', [1, 2], ['-b', broker])
        const deadline = Date.now() + 40_000
        const lost = new RegExp(`Could not store the SUCCESS result of proj\\.add\\[${id}\\]: ENOSPC.*\\(gave up after 6 tries\\)`)
        while (!lost.test(worker.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
        assert.match(worker.output(), lost)
        assert.deepEqual(readdirSync(join(disk, 'results')), [], 'no partial or temporary result file')

        // Celery's `celery result` waits for ever too; tsq says so once the wait is long.
        const waiting = spawn(process.execPath, [BIN, 'result', id, '--result-backend', results], {
          cwd: ROOT,
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        let stderr = ''
        waiting.stderr.on('data', (d) => (stderr += d))
        const until = Date.now() + 30_000
        while (!stderr.includes('Still waiting') && waiting.exitCode === null && Date.now() < until)
          await new Promise((r) => setTimeout(r, 100))
        const stillRunning = waiting.exitCode === null
        waiting.kill('SIGTERM')
        assert.ok(stillRunning, `tsq result ended: ${stderr}`)
        assert.equal(
          stderr.trim(),
          `Still waiting for ${id} (PENDING in ${results}): no result stored yet. Waiting until there is one; -t SECONDS gives up sooner.`,
        )
      } finally {
        await worker.stop()
      }
    },
  )
})
