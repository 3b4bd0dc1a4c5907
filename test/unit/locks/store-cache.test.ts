// lockStoreAt keeps one store per URL per process; closeLockStoreAt closes it
// and forgets it, so the next caller (a second dashboard in the same process)
// gets a new store rather than the closed one.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, it } from 'node:test'
import { closeLockStoreAt, lockStoreAt } from '../../../src/locks/index.js'

const dir = mkdtempSync(join(tmpdir(), 'tsq-store-cache-'))
after(() => rmSync(dir, { recursive: true, force: true }))

it('one store per URL until closeLockStoreAt; then a new one', async () => {
  const url = `file://${dir}`
  const first = await lockStoreAt(url)
  assert.equal(await lockStoreAt(url), first)
  await closeLockStoreAt(url)
  const second = await lockStoreAt(url)
  assert.notEqual(second, first)
  await closeLockStoreAt(url)
})
