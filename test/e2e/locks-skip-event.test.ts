// A run skipped because its lock is held is shown in the task
// events. Celery sends none for an Ignore, so the skip sends a custom
// `task-skipped` event (Celery's events.State takes an unknown task-* type as
// the task's state: SKIPPED in `celery events` and Flower), and
// `tsq events --dump` prints it with the lock that was held.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { waitFor } from '../helpers/brokers.js'
import { BIN, embeddedBrokerEnv, ROOT, runTsq, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'

const APP = 'test/fixtures/tasks/skip-event-tasks.js'

describe('a skipped run in the task events', () => {
  const env = embeddedBrokerEnv(tempTsqHome())
  let worker: SpawnedWorker | undefined
  after(async () => {
    await worker?.stop()
  })

  it('task-skipped names the held lock; the held run ends as usual', async () => {
    worker = await startWorker(['-A', APP, '-P', 'threads', '-c', '2', '-E', '-l', 'INFO'], {
      env,
      nodename: `skipev-${process.pid}@testhost`,
    })
    const dump = spawn(process.execPath, [BIN, 'events', '--json', '--timeout', '25'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    dump.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')))
    const exited = new Promise<void>((resolve) => dump.once('exit', () => resolve()))
    try {
      // The dump is listening once it sees the worker's heartbeat.
      await waitFor(() => (out.includes('worker-heartbeat') ? true : null), { timeoutMs: 20_000, what: 'the dump hears the worker' })
      const send = async (ms: number) => {
        const r = await runTsq(['call', 'skipev.hold', '--args', JSON.stringify([ms])], { env })
        assert.equal(r.code, 0, r.stderr)
        return r.stdout.trim()
      }
      const held = await send(4000)
      await waitFor(() => (out.includes(`"task-started"`) && out.includes(held) ? true : null), {
        timeoutMs: 20_000,
        what: 'the first run starts',
      })
      const skipped = await send(10)
      const events = () =>
        out
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>)
      const skip = await waitFor(() => events().find((e) => e.type === 'task-skipped') ?? null, {
        timeoutMs: 20_000,
        what: 'the task-skipped event',
      })
      assert.equal(skip.uuid, skipped)
      assert.equal(skip.reason, 'locked')
      assert.match(String(skip.lock), /^skipev\.hold-lock/)
      assert.ok(Number(skip.lease_left) > 0)
      await waitFor(() => (events().some((e) => e.type === 'task-succeeded' && e.uuid === held) ? true : null), {
        timeoutMs: 20_000,
        what: 'the held run succeeds',
      })
      assert.ok(!events().some((e) => e.type === 'task-skipped' && e.uuid === held), 'the run that held the lock was not skipped')
      assert.match(worker.output(), new RegExp(`Task skipev\\.hold\\[${skipped}\\] ignored`))
    } finally {
      dump.kill('SIGTERM')
      await exited
    }
  })
})
