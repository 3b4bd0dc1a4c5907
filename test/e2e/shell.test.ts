// `tsq shell -A <module>` with a script piped in (issue 26 item 4): it calls a
// task through a running worker and prints the result, sees the tasks by
// short name and under `tasks`, and ends non-zero on an uncaught error.
import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { describe, it } from 'node:test'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { runTsq, startWorker } from '../helpers/cli.js'

const APP = 'test/fixtures/tasks/interop-tasks.js'
const BROKER = REDIS_URL.replace(/\/0$/, '/12')
const skip = await brokerSkipReason('redis')

describe('tsq shell (issue 26 item 4)', { skip }, () => {
  it('a piped script calls a task through a running worker and prints its result', async () => {
    const queue = uniqueName('cli-shell')
    const env = { TSQ_WI_DEFAULT_QUEUE: queue, TSQ_BROKER_URL: '', CELERY_BROKER_URL: '' }
    const worker = await startWorker(['-A', APP, '-b', BROKER, '--result-backend', BROKER, '-P', 'solo', '-l', 'INFO'], {
      nodename: `${queue}@${hostname()}`,
      env,
    })
    try {
      const script = [
        'console.log(await add.delay(2, 2).get({ timeout: 30 }))',
        "const r = await tasks['proj.add'].delay(40, 2)",
        'console.log(await r.get({ timeout: 30 }), typeof chain, typeof group, typeof chord, typeof chunks, typeof signature, app.name)',
      ].join('\n')
      const r = await runTsq(['shell', '-A', APP, '-b', BROKER, '--result-backend', BROKER], { input: script, env, timeoutMs: 90_000 })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stdout, '4\n42 function function function function function proj\n')
    } finally {
      assert.equal(await worker.stop(), 0)
    }
  })

  it('-T leaves the tasks out; an uncaught error is one line and exit 1', async () => {
    const r = await runTsq(['shell', '-A', APP, '-T'], { input: "console.log(typeof add, typeof tasks)\nthrow new TypeError('boom')" })
    assert.equal(r.code, 1)
    assert.equal(r.stdout, 'undefined undefined\n')
    assert.equal(r.stderr, 'Error: Uncaught TypeError: boom\n')
  })
})
