// oclif's several-line usage errors as one line that names
// what is missing and where help is, and `tsq worker` without -A running the
// default app (built-in tasks only, answering remote control), as
// `celery -b URL worker` does without --app.
import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { describe, it } from 'node:test'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { runTsq, startWorker } from '../helpers/cli.js'

const BROKER = REDIS_URL.replace(/\/0$/, '/12')

describe('usage errors name what is missing (issue 26 item 8)', () => {
  for (const [args, missing] of [
    [['call'], 'task'],
    [['control'], 'method'],
    [['result'], 'id'],
  ] as const) {
    it(`tsq ${args.join(' ')} names the argument and the help`, async () => {
      const r = await runTsq([...args])
      assert.equal(r.code, 64)
      const lines = r.stderr.trim().split('\n')
      assert.equal(lines.length, 1, r.stderr)
      assert.match(lines[0]!, new RegExp(`Missing required argument: ${missing} \\(try 'tsq ${args[0]} --help'\\)`))
    })
  }

  it('an unknown flag of worker names the flag and the help', async () => {
    const r = await runTsq(['worker', '--no-such-flag'])
    assert.equal(r.code, 64)
    assert.equal(r.stderr.trim(), "Error: Nonexistent flag: --no-such-flag (try 'tsq worker --help')")
  })

  it('--json: the error is one JSON document on stdout', async () => {
    const r = await runTsq(['call', '--json'])
    assert.equal(r.code, 64)
    const doc = JSON.parse(r.stdout) as { error: { message: string; exitCode: number } }
    assert.equal(doc.error.exitCode, 64)
    assert.match(doc.error.message, /task/)
  })
})

const skip = await brokerSkipReason('redis')

describe('tsq worker without -A runs the default app', { skip }, () => {
  it('starts, answers ping and has no tasks of its own', async () => {
    const nodename = `${uniqueName('cli-default')}@${hostname()}`
    const queue = uniqueName('cli-default-q')
    const worker = await startWorker(['-b', BROKER, '-P', 'solo', '-l', 'INFO', '-Q', queue], {
      nodename,
      env: { TSQ_BROKER_URL: '', CELERY_BROKER_URL: '' },
    })
    try {
      assert.match(worker.output(), /app: +default/)
      const ping = await runTsq(['inspect', 'ping', '-b', BROKER, '-d', nodename, '-j'])
      assert.equal(ping.code, 0, ping.stderr)
      assert.deepEqual(JSON.parse(ping.stdout), { [nodename]: { ok: 'pong' } })
      const registered = await runTsq(['inspect', 'registered', '-b', BROKER, '-d', nodename, '-j'])
      assert.deepEqual(JSON.parse(registered.stdout), { [nodename]: [] })
    } finally {
      assert.equal(await worker.stop(), 0)
    }
  })
})
