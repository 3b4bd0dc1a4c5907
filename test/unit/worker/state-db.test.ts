// --statedb: revoked ids (with their ages) and the clock round-trip through the file.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { it } from 'node:test'
import { LamportClock } from '../../../src/transport/index.js'
import { LimitedSet } from '../../../src/worker/control/limited-set.js'
import { StateDb } from '../../../src/worker/control/state-db.js'

it('[statedb] revoked ids and the clock survive; expired ids do not come back', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-statedb-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'sub', 'w.db')
  const revoked = new LimitedSet(100, 3600)
  const clock = new LamportClock()
  clock.adjust(41)
  revoked.add('a')
  new StateDb(path, revoked, clock, () => undefined).save()
  const saved = JSON.parse(readFileSync(path, 'utf8'))
  assert.equal(saved.format, 'tsq-statedb')
  // Make 'old' two hours older than the expiry allows.
  saved.revoked.old = Date.now() / 1000 - 7200
  writeFileSync(path, JSON.stringify(saved))

  const revoked2 = new LimitedSet(100, 3600)
  const clock2 = new LamportClock()
  new StateDb(path, revoked2, clock2, () => undefined).load()
  assert.deepEqual(revoked2.ids(), ['a'])
  assert.ok(clock2.value > 42)
})

it('[statedb] a missing file is a first start; a foreign one is ignored with a warning', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-statedb-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const warnings: string[] = []
  new StateDb(join(dir, 'none.db'), new LimitedSet(), new LamportClock(), (m) => warnings.push(m)).load()
  assert.equal(warnings.length, 0)
  writeFileSync(join(dir, 'bad.db'), '{"x":1}')
  new StateDb(join(dir, 'bad.db'), new LimitedSet(), new LamportClock(), (m) => warnings.push(m)).load()
  assert.match(warnings[0] ?? '', /not a tsq statedb file/)
})
