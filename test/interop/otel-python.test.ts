// tsq-test: slow 3
// The interop check against the real opentelemetry-instrumentation-celery
// (test/interop/otel-python/run.mjs), run only where TSQ_OTEL_PY_PATH points at
// the OpenTelemetry Python sources: a Python client -> tsq worker -> Python
// worker -> tsq worker chain, and the same from a tsq client, is one trace
// with the span names both agree on; then the same in span-link mode.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { describe, it } from 'node:test'
import { REDIS_URL, brokerSkipReason } from '../helpers/brokers.js'
import { REPO_ROOT } from './helpers/python-worker.js'

const snapshots = process.env.TSQ_OTEL_PY_PATH
const skip = snapshots
  ? await brokerSkipReason('redis')
  : 'TSQ_OTEL_PY_PATH is not set (the OpenTelemetry Python sources; see test/interop/otel-python/run.mjs)'
const SCRIPT = resolve(REPO_ROOT, 'test/interop/otel-python/run.mjs')

describe('[tracing] the real Python Celery instrumentation and tsq, one trace', { skip }, () => {
  for (const mode of [[], ['--links']]) {
    it(`run.mjs ${mode.join(' ') || '(parent/child)'}: every check holds`, () => {
      const res = spawnSync(process.execPath, [SCRIPT, ...mode], {
        env: { ...process.env, OTEL_BROKER: REDIS_URL },
        encoding: 'utf8',
        timeout: 180_000,
      })
      assert.equal(res.status, 0, `${res.stdout}\n${res.stderr}`)
    })
  }
})
