// The file store's batch reservation (issue 19 item 6): one lock and one write
// for a pass's runs, each with its own compare-and-set, and the give-back of
// runs that were reserved but never sent.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { intervalJson } from '../../../src/beat/entry.js'
import { FileStore } from '../../../src/beat/file-store.js'

const def = (name: string, enabled = true) => ({ name, task: 't', args: [], kwargs: {}, options: {}, schedule: intervalJson(5), enabled })

test('[--scheduler file] reserveAll: each run compare-and-set, one write for the batch', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-beat-'))
  try {
    const path = join(dir, 's.json')
    const store = new FileStore(path)
    for (const name of ['a', 'b', 'c']) await store.save(def(name, name !== 'c'), { now: 1000 })
    await store.save(def('b'), { meta: { lastRunAt: 6000, totalRunCount: 1 } })
    const run = (name: string, expectedCount = 0) => ({ name, expectedCount, ranAt: 7000, nextDueAt: 12_000 })
    assert.deepEqual(await store.reserveAll([run('a'), run('b'), run('c'), run('gone')]), ['ok', 'stale', 'gone', 'gone'])
    assert.deepEqual((await store.get('a'))?.meta, { lastRunAt: 7000, totalRunCount: 1 })
    assert.deepEqual((await store.get('b'))?.meta, { lastRunAt: 6000, totalRunCount: 1 })
    const written = statSync(path).mtimeMs
    assert.deepEqual(await store.reserveAll([run('a'), run('b')]), ['stale', 'stale'])
    assert.equal(statSync(path).mtimeMs, written, 'nothing reserved, nothing written')
    assert.deepEqual(await store.reserveAll([]), [])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('[--scheduler file] release gives back only a reservation nothing was recorded after', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-beat-'))
  try {
    const store = new FileStore(join(dir, 's.json'))
    const previous = { lastRunAt: 1000, totalRunCount: 0 }
    for (const name of ['a', 'b']) await store.save(def(name), { meta: previous })
    const runs = ['a', 'b'].map((name) => ({ name, expectedCount: 0, ranAt: 7000, nextDueAt: 12_000 }))
    assert.deepEqual(await store.reserveAll(runs), ['ok', 'ok'])
    assert.equal(await store.reserve({ name: 'b', expectedCount: 1, ranAt: 12_000, nextDueAt: 17_000 }), 'ok')
    assert.equal(await store.release(runs.map((r) => ({ ...r, previous }))), 1)
    assert.deepEqual((await store.get('a'))?.meta, previous)
    assert.deepEqual((await store.get('b'))?.meta, { lastRunAt: 12_000, totalRunCount: 2 })
    assert.equal(
      (await store.due(7000)).entries.some((e) => e.definition.name === 'a'),
      true,
      'a is due again',
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
