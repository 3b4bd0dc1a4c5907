import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { auditLines } from '../../../src/logtool/index.js'

async function* lines(text: string): AsyncGenerator<string> {
  for (const line of text.split('\n')) yield line
}

const LOG = `[2026-11-25 10:00:00,000: INFO/MainProcess] Connected to redis://127.0.0.1:6379/12
[2026-11-25 10:00:01,000: INFO/MainProcess] Task proj.add[a1] received
[2026-11-25 10:00:01,100: INFO/ForkPoolWorker-1] Task proj.add[a1] succeeded in 0.001s: 2
[2026-11-25 10:00:02,000: INFO/MainProcess] Task proj.flaky[f1] received
[2026-11-25 10:00:02,100: INFO/ForkPoolWorker-1] Task proj.flaky[f1] retry: Retry in 1s
[2026-11-25 10:00:03,000: INFO/MainProcess] Task proj.flaky[f1] received
[2026-11-25 10:00:03,100: INFO/ForkPoolWorker-2] Task proj.flaky[f1] succeeded in 0.002s: 1
[2026-11-25 10:00:04,000: INFO/MainProcess] Task proj.fail[e1] received
[2026-11-25 10:00:04,100: ERROR/ForkPoolWorker-2] Task proj.fail[e1] raised unexpected: ValueError('x')
Traceback (most recent call last):
  File "tasks.py", line 30, in fail
ValueError: x
[2026-11-25 10:00:05,000: INFO/MainProcess] Task proj.sleep[s1] received`

describe('logtool audit', () => {
  it('counts a retried task once, finished, and its retry', async () => {
    const stats = (await auditLines(lines(LOG))).stats()
    assert.deepEqual(stats, {
      total: 4,
      succeeded: 2,
      failed: 1,
      retried: 1,
      completed: 3,
      incomplete: 1,
      tasks: [
        { name: 'proj.add', count: 1 },
        { name: 'proj.fail', count: 1 },
        { name: 'proj.flaky', count: 1 },
        { name: 'proj.sleep', count: 1 },
      ],
    })
  })

  it('keeps a traceback with the record it follows, and a retried task pending until it ends', async () => {
    const records: string[] = []
    await auditLines(lines(LOG.split('\n').slice(0, 12).join('\n')), {
      onRecord: (r, e) => e?.kind === 'failed' && records.push([r.header, ...r.continuation].join('\n')),
    })
    assert.deepEqual(records, [LOG.split('\n').slice(8, 12).join('\n')])
    const retrying = await auditLines(lines(LOG.split('\n').slice(0, 5).join('\n')))
    assert.deepEqual(retrying.incomplete(), [{ id: 'f1', name: 'proj.flaky' }])
  })
})
