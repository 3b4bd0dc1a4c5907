// Chords on the embedded result store: the same contract as the Redis counts
// (spec §2.3): only the part that completes the chord gets every part, in
// group order; a part that ends twice counts once; no size, no completion,
// and a part of a chord already completed leaves nothing behind.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { FileResultBackend } from '../../../src/backends/file-backend.js'
import { encodeChordPart } from '../../../src/protocol/index.js'

describe('[file backend] chord counts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-file-chord-'))
  const backend = new FileResultBackend(dir)
  after(() => rmSync(dir, { recursive: true, force: true }))

  const part = (id: string, value: unknown) => encodeChordPart(id, 'SUCCESS', value)

  it('the last part gets them all in group order, and the chord leaves nothing behind', async () => {
    const gid = randomUUID()
    await backend.setChordSize(gid, 3)
    assert.equal(await backend.chordPartReturn(gid, 2, part('c', 4), 'c'), null)
    assert.equal(await backend.chordPartReturn(gid, 10, part('d', 9), 'd').then(() => 'counted'), 'counted', 'index 10 sorts after 2')
    const parts = await backend.chordPartReturn(gid, 0, part('a', 0), 'a')
    assert.deepEqual(parts, [part('a', 0), part('c', 4), part('d', 9)])
    assert.deepEqual(readdirSync(join(dir, 'results', 'chords')), [])
  })

  it('parts ending at once: exactly one completes the chord', async () => {
    const gid = randomUUID()
    await backend.setChordSize(gid, 25)
    const all = await Promise.all(Array.from({ length: 25 }, (_, i) => backend.chordPartReturn(gid, i, part(`t${i}`, i), `t${i}`)))
    const completing = all.filter((p) => p !== null)
    assert.equal(completing.length, 1)
    assert.deepEqual(
      completing[0]!.map((p) => JSON.parse(p)[3]),
      Array.from({ length: 25 }, (_, i) => i),
    )
  })

  it('a task that ends twice counts once; without a size nothing completes', async () => {
    const gid = randomUUID()
    await backend.setChordSize(gid, 2)
    assert.equal(await backend.chordPartReturn(gid, 0, part('a', 1), 'a'), null)
    assert.equal(await backend.chordPartReturn(gid, 0, part('a', 1), 'a'), null, 'the redelivered copy replaced its part')
    assert.equal((await backend.chordPartReturn(gid, 1, part('b', 2), 'b'))?.length, 2)
    const sizeless = randomUUID()
    assert.equal(await backend.chordPartReturn(sizeless, 0, part('x', 1), 'x'), null)
    assert.deepEqual(
      readdirSync(join(dir, 'results', 'chords')).filter((n) => n === sizeless),
      [],
      'a part with no chord to count towards leaves nothing',
    )
  })

  it('a part redelivered after its chord completed changes nothing and leaves no directory behind', async () => {
    const gid = randomUUID()
    await backend.setChordSize(gid, 1)
    assert.equal((await backend.chordPartReturn(gid, 0, part('a', 1), 'a'))?.length, 1)
    assert.equal(await backend.chordPartReturn(gid, 0, part('a', 1), 'a'), null, 'the body is not sent twice')
    assert.deepEqual(
      readdirSync(join(dir, 'results', 'chords')).filter((n) => n === gid),
      [],
    )
  })

  it('a header saved whole (GroupResult.save) reads back as saved, kept after the chord completes; none saved reads null', async () => {
    const gid = randomUUID()
    const tuple = [
      [gid, null],
      [
        [['a', null], null],
        [[gid, [['b', null], null]], [[['c', null], null]]],
      ],
    ]
    await backend.saveGroupResult(gid, tuple)
    await backend.setChordSize(gid, 1)
    assert.deepEqual(await backend.chordPartReturn(gid, 0, part('a', 1), 'a'), [part('a', 1)])
    assert.deepEqual(await backend.restoreGroupResult(gid), tuple)
    assert.equal(await backend.restoreGroupResult(randomUUID()), null)
    assert.equal(await backend.restoreGroupResult('../x'), null, 'an id names no path outside the store')
  })
})
