// `tsq dashboard --persistent FILE` reads a state file saved by an earlier
// tsq (test/fixtures/dashboard/state-v1.json) through the dashboard's own
// loader: its size and nesting checks, then the cluster state; a file that is
// not one is refused with the usage error it always gave.
import assert from 'node:assert/strict'
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Cluster } from '../../../src/dashboard/cluster.js'

const FIXTURE = fileURLToPath(new URL('../../fixtures/dashboard/state-v1.json', import.meta.url))

describe('--persistent: the dashboard loads a saved state file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-dash-state-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('the tasks, workers and counts of a version-1 file come back', () => {
    const path = join(dir, 'state.json')
    copyFileSync(FIXTURE, path)
    chmodSync(path, 0o600)
    const cluster = new Cluster({ brokerUrl: `file://${join(dir, 'broker')}`, maxTasks: 100, persistent: { path } })
    assert.equal(cluster.state.eventCount, 20)
    assert.equal(cluster.state.tasks.size, 8)
    assert.equal(cluster.state.tasks.get('root')?.state, 'SUCCESS')
    assert.deepEqual(cluster.state.tasks.get('root')?.children, ['child'])
    assert.deepEqual([...cluster.state.workers.keys()], ['celery@w1', 'celery@w2', 'client@h'])
  })

  it('a file of another version or shape is refused as not a state file', () => {
    for (const [name, text] of [
      ['v2.json', '{"version":2,"tasks":[],"workers":[]}'],
      ['list.json', '[]'],
      ['junk.json', 'not json'],
    ] as const) {
      const path = join(dir, name)
      writeFileSync(path, text, { mode: 0o600 })
      assert.throws(
        () => new Cluster({ brokerUrl: `file://${join(dir, 'broker')}`, maxTasks: 10, persistent: { path } }),
        /not a tsq dashboard state file/,
        name,
      )
    }
  })
})
