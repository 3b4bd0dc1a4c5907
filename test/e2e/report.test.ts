// `tsq report` (issue 26 item 5): a password in the broker URL, one in the
// backend URL, and settings named like secrets (apiToken, database_url) are
// never printed, in text or in --json; what is not secret is.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runTsq } from '../helpers/cli.js'

const APP = 'test/fixtures/tasks/report-tasks.js'
const ENV = { TSQ_BROKER_URL: '', CELERY_BROKER_URL: '', TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '' }

describe('tsq report (issue 26 item 5)', () => {
  it('masks passwords and secret settings, shows the rest', async () => {
    const r = await runTsq(['report', '-A', APP], { env: ENV })
    assert.equal(r.code, 0, r.stderr)
    assert.doesNotMatch(r.stdout + r.stderr, /s3cr3t/)
    assert.match(r.stdout, /^software -> tsq:\d+\.\d+\.\d+ node:v\d+/)
    assert.match(r.stdout, /^broker_url: "amqp:\/\/admin:\*{8}@127\.0\.0\.1:5672\/\/"$/m)
    assert.match(r.stdout, /^result_backend: "redis:\/\/:\*{8}@127\.0\.0\.1:6379\/12"$/m)
    assert.match(r.stdout, /^apiToken: "\*{8}"$/m)
    assert.match(r.stdout, /^worker_prefetch_multiplier: 2$/m)
    assert.match(r.stdout, /^task_default_queue: "cli-report"$/m)
  })

  it('--json and a -b with a password: one document, nothing secret', async () => {
    const r = await runTsq(['-b', 'redis://:s3cr3t-flag@127.0.0.1:6379/12', 'report', '-A', APP, '--json'], { env: ENV })
    assert.equal(r.code, 0, r.stderr)
    assert.doesNotMatch(r.stdout, /s3cr3t/)
    const report = JSON.parse(r.stdout)
    assert.equal(report.broker, 'redis://:********@127.0.0.1:6379/12')
    assert.equal(report.settings.apiToken, '********')
    assert.equal(report.settings.database_url, '********')
  })

  it('a missing app module is one line and exit 64', async () => {
    const r = await runTsq(['report', '-A', './no-such-module.js'], { env: ENV })
    assert.equal(r.code, 64)
    assert.equal(r.stderr.trim().split('\n').length, 1)
  })
})
