// The file:// stores on disk: ids and names that are paths (`..`, `.`, `a/b`,
// NUL) read, write and delete only inside their folder in the broker, the
// result store (chords included) and the lock store; every store's folders are
// 0700 and files 0600 under a permissive umask; a folder others can write to
// (for the one-file stores: one others can replace files in)
// or that another user owns is refused with one line, our own 755 one is
// tightened; on a full disk (a small tmpfs) a failed write leaves no partial
// file and a result write is tried again before it is given up.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { FileResultBackend } from '../../../src/backends/file-backend.js'
import { intervalJson } from '../../../src/beat/entry.js'
import { FileStore } from '../../../src/beat/file-store.js'
import { Cluster } from '../../../src/dashboard/cluster.js'
import { FileLockStore } from '../../../src/locks/file-store.js'
import { encodeChordPart, encodeResultMeta } from '../../../src/protocol/index.js'
import { FileTransport } from '../../../src/transport/file/file-transport.js'
import { LamportClock } from '../../../src/transport/index.js'
import { LimitedSet } from '../../../src/worker/control/limited-set.js'
import { StateDb } from '../../../src/worker/control/state-db.js'
import { message, queueSpec } from './fixtures/file-kit.js'

const PATH_IDS = ['..', '.', 'a/b', 'a\0b', '../victim', '/abs', '']
const who = { node: 'w1@test', pid: process.pid, task: null, taskId: null }
const isRoot = process.getuid?.() === 0
const NOBODY = 65534

const roots: string[] = []
function scratch(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  roots.push(dir)
  return dir
}
after(() => {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true })
})

/** Every path under `dir`, relative, with its mode. */
function walk(dir: string, base = dir): Array<{ path: string; dir: boolean; mode: number }> {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    const entry = { path: relative(base, path), dir: e.isDirectory(), mode: statSync(path).mode & 0o777 }
    return e.isDirectory() ? [entry, ...walk(path, base)] : [entry]
  })
}

const result = (id: string, value: unknown) => encodeResultMeta({ taskId: id, status: 'SUCCESS', result: value })

describe('[file://] ids and names that are paths stay inside their folder', () => {
  it('result store: `..` and friends as task and chord group ids; a completed `..` chord deletes no result', async () => {
    const outer = scratch('tsq-ids-results-')
    writeFileSync(join(outer, 'outside.json'), 'keep')
    const root = join(outer, 'store')
    const backend = new FileResultBackend(root)
    await backend.store('victim', result('victim', 1), 'SUCCESS')
    for (const [i, id] of PATH_IDS.entries()) {
      await backend.store(id, result(id, i), 'SUCCESS')
      assert.equal((await backend.get(id))?.result, i, JSON.stringify(id))
    }
    for (const gid of PATH_IDS) {
      await backend.setChordSize(gid, 2)
      assert.equal(await backend.chordPartReturn(gid, 0, encodeChordPart('p0', 'SUCCESS', 1), '..'), null)
      assert.equal((await backend.chordPartReturn(gid, 1, encodeChordPart('p1', 'SUCCESS', 2), 'a/b'))?.length, 2, JSON.stringify(gid))
    }
    // The probe: before, the `..` chord's folder was results/ itself, removed when the chord completed.
    assert.equal((await backend.get('victim'))?.result, 1)
    for (const [i, id] of PATH_IDS.entries()) assert.equal((await backend.get(id))?.result, i, JSON.stringify(id))
    for (const id of PATH_IDS) await backend.forget(id)
    assert.equal((await backend.get('victim'))?.result, 1)
    assert.deepEqual(readdirSync(outer).sort(), ['outside.json', 'store'])
    assert.deepEqual(readdirSync(join(root, 'results')).sort(), ['chords', 'victim.json'])
  })

  it('lock store: `..` and friends as lock ids are listed as given and removed alone', async () => {
    const outer = scratch('tsq-ids-locks-')
    const root = join(outer, 'store')
    const store = new FileLockStore(`file://${root}`)
    const ids = [...PATH_IDS, 'victim']
    for (const id of ids) assert.ok((await store.acquire(id, 60_000, who)).acquired, JSON.stringify(id))
    assert.deepEqual((await store.list()).map((l) => l.id).sort(), [...ids].sort())
    for (const id of PATH_IDS) assert.equal(await store.remove(id), true)
    assert.deepEqual(
      (await store.list()).map((l) => l.id),
      ['victim'],
    )
    assert.deepEqual(readdirSync(outer), ['store'])
    assert.deepEqual(readdirSync(root), ['locks'])
  })

  it('broker: queues named `..` and friends carry their own messages, and deleting one deletes no other', async () => {
    const outer = scratch('tsq-ids-broker-')
    const root = join(outer, 'broker')
    const transport = new FileTransport(root)
    await transport.connect()
    try {
      await transport.declareQueue(queueSpec('victim'))
      await transport.publish('', 'victim', message('kept'))
      const names = PATH_IDS.filter((q) => q !== '')
      for (const q of names) {
        await transport.declareQueue(queueSpec(q))
        await transport.publish('', q, message(`to ${q}`))
      }
      for (const q of names) assert.equal((await transport.checkQueue(q))?.messageCount, 1, JSON.stringify(q))
      for (const q of names) await transport.deleteQueue(q)
      assert.equal((await transport.checkQueue('victim'))?.messageCount, 1)
      assert.deepEqual(readdirSync(join(root, 'queues')), ['victim'])
      assert.deepEqual(readdirSync(outer), ['broker'])
    } finally {
      await transport.close()
    }
  })
})

describe('[file://] private folders and files', () => {
  let umask = 0
  before(() => {
    umask = process.umask(0o000)
  })
  after(() => {
    process.umask(umask)
  })

  it('under umask 000 every store makes its folders 0700 and its files 0600', async () => {
    const home = scratch('tsq-modes-')
    const broker = join(home, 'broker')
    const transport = new FileTransport(broker)
    await transport.connect()
    await transport.declareQueue(queueSpec('celery'))
    await transport.publish('', 'celery', message('hello'))
    await transport.publish('', 'implicit', message('created by a publish'))
    const received = new Promise<void>((resolve) => {
      void transport.consume('celery', async () => resolve(), { prefetch: 1 })
    })
    await received
    const backend = new FileResultBackend(broker)
    await backend.store('t1', result('t1', 1), 'SUCCESS')
    await backend.setChordSize('g1', 2)
    await backend.chordPartReturn('g1', 0, encodeChordPart('p0', 'SUCCESS', 1), 'p0')
    const locks = new FileLockStore(`file://${broker}`)
    await locks.acquire('proj.add-lock', 60_000, who)
    await locks.mark('proj.add-once', 't1', 60_000)
    const schedule = new FileStore(join(home, 'state', 'beat', 'schedule.json'))
    await schedule.save({ name: 'every-5', task: 't', args: [], kwargs: {}, options: {}, schedule: intervalJson(5), enabled: true })
    const statedb = new StateDb(join(home, 'state', 'worker', 'w1.db'), new LimitedSet(), new LamportClock(), (m) => assert.fail(m))
    statedb.save()
    const dashboard = new Cluster({
      brokerUrl: `file://${broker}`,
      maxTasks: 10,
      persistent: { path: join(home, 'state', 'dash', 'tsq-dashboard.db') },
    })
    dashboard.save()
    const entries = walk(home)
    await transport.close()
    const wrong = entries.filter((e) => e.mode !== (e.dir ? 0o700 : 0o600)).map((e) => `${e.path} ${e.mode.toString(8)}`)
    assert.deepEqual(wrong, [])
    for (const expected of [
      'broker/results/t1.json',
      'broker/results/chords/g1/size',
      'broker/locks/proj.add-lock.lock',
      'broker/queues/celery/meta.json',
      'state/beat/schedule.json',
      'state/worker/w1.db',
      'state/dash/tsq-dashboard.db',
    ]) {
      assert.ok(
        entries.some((e) => e.path === expected),
        `${expected} was written`,
      )
    }
  })

  it('a folder others can write to is refused with one line, for the broker, the result store and the lock store', async () => {
    const open: Array<[string, (dir: string) => Promise<unknown>]> = [
      ['broker', (dir) => new FileTransport(dir).connect()],
      ['result store', (dir) => new FileResultBackend(dir).get('x')],
      ['lock store', (dir) => new FileLockStore(`file://${dir}`).list()],
    ]
    for (const [what, use] of open) {
      const dir = join(scratch('tsq-unsafe-'), 'store')
      mkdirSync(dir)
      chmodSync(dir, 0o777)
      const error = (await use(dir).then(
        () => assert.fail(`${what}: used a world-writable folder`),
        (e: Error) => e,
      )) as Error
      assert.match(error.message, /is writable by others \(mode 0777\): refusing to use it/, what)
      assert.doesNotMatch(error.message, /\n/, `${what}: one line`)
      assert.equal(statSync(dir).mode & 0o777, 0o777, `${what}: left as it was`)
      assert.deepEqual(readdirSync(dir), [], `${what}: nothing written`)
    }
  })

  it('a one-file store (beat schedule, statedb, dashboard state) in a folder others can replace files in is refused; a sticky one like /tmp is fine', async () => {
    const open = scratch('tsq-open-folder-')
    chmodSync(open, 0o777)
    const schedule = new FileStore(join(open, 'schedule.json'))
    const entry = { name: 'e', task: 't', args: [], kwargs: {}, options: {}, schedule: intervalJson(5), enabled: true }
    await assert.rejects(schedule.save(entry), /schedule file .* its folder .* is writable by others \(mode 0777\): refusing to use it/)
    const warned: string[] = []
    new StateDb(join(open, 'w1.db'), new LimitedSet(), new LamportClock(), (m) => warned.push(m)).save()
    assert.match(warned.join('\n'), /statedb .* not saved: statedb .* is writable by others/)
    assert.throws(
      () => new Cluster({ brokerUrl: 'file:///nowhere', maxTasks: 10, persistent: { path: join(open, 'dash.db') } }),
      /is writable by others/,
    )
    assert.deepEqual(readdirSync(open), [])
    chmodSync(open, 0o1777)
    await new FileStore(join(open, 'schedule.json')).save(entry)
    assert.equal(statSync(join(open, 'schedule.json')).mode & 0o777, 0o600)
  })

  it(
    'a folder another user owns is refused; our own 755 and 775 folders of older versions are tightened to 0700',
    { skip: isRoot ? false : 'chown needs root' },
    async () => {
      for (const use of [
        (dir: string) => new FileTransport(dir).connect(),
        (dir: string) => new FileResultBackend(dir).get('x'),
        (dir: string) => new FileLockStore(`file://${dir}`).list(),
      ]) {
        const dir = join(scratch('tsq-foreign-'), 'store')
        mkdirSync(dir, { mode: 0o755 })
        chownSync(dir, NOBODY, NOBODY)
        const error = (await use(dir).then(
          () => assert.fail('used a folder owned by nobody'),
          (e: Error) => e,
        )) as Error
        assert.match(error.message, /is owned by uid 65534, not by this user \(uid 0\): refusing to use it/)
        assert.doesNotMatch(error.message, /\n/)
      }
      const state = join(scratch('tsq-foreign-file-'), 'dash.db')
      writeFileSync(state, JSON.stringify({ version: 1, tasks: [], workers: [] }))
      chownSync(state, NOBODY, NOBODY)
      assert.throws(
        () => new Cluster({ brokerUrl: 'file:///nowhere', maxTasks: 10, persistent: { path: state } }),
        /dashboard --persistent state .* is owned by uid 65534/,
      )
      for (const mode of [0o755, 0o775]) {
        const old = join(scratch('tsq-old-'), 'broker')
        mkdirSync(old)
        chmodSync(old, mode)
        const transport = new FileTransport(old)
        await transport.connect()
        await transport.close()
        assert.equal(statSync(old).mode & 0o777, 0o700, mode.toString(8))
      }
    },
  )
})

// A tmpfs of our own: root and a kernel that lets this container mount one.
function mountTmpfs(sizeKb: number): string | undefined {
  if (!isRoot) return undefined
  const dir = scratch('tsq-full-disk-')
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k,mode=0700`, 'tmpfs', dir])
  return r.status === 0 ? dir : undefined
}
/** Fills the disk: the write fails with ENOSPC once nothing is left, leaving the filler as large as it could be. */
function fill(dir: string): string {
  const filler = join(dir, 'filler')
  try {
    writeFileSync(filler, Buffer.alloc(64 << 20))
  } catch (error) {
    assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC')
  }
  return filler
}

describe('[file://] a full disk', () => {
  const disk = mountTmpfs(512)
  const skip = disk ? false : 'needs root and `mount -t tmpfs`'
  after(() => {
    if (disk) spawnSync('umount', [disk])
  })

  it('a publish that fails leaves no partial file in tmp/', { skip }, async () => {
    const root = join(disk!, 'broker')
    const transport = new FileTransport(root)
    await transport.connect()
    try {
      await transport.declareQueue(queueSpec('celery'))
      const filler = fill(disk!)
      await assert.rejects(transport.publish('', 'celery', message('x'.repeat(64 << 10))), /ENOSPC/)
      assert.deepEqual(readdirSync(join(root, 'tmp')), [], 'no 0-byte file left behind')
      assert.deepEqual(readdirSync(join(root, 'queues', 'celery', 'ready')), [])
      unlinkSync(filler)
    } finally {
      await transport.close()
    }
  })

  it(
    'a result write is tried again, stored once the disk has room, and given up (no partial file) when it never has',
    { skip },
    async () => {
      const root = join(disk!, 'results-store')
      const retries: number[] = []
      let filler = ''
      let freeOnSecondTry = true
      const backend = new FileResultBackend(root, {
        retryDelaysMs: [1, 1, 1],
        onRetry: (_id, attempt, error) => {
          retries.push(attempt)
          assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC')
          if (attempt === 2 && freeOnSecondTry) unlinkSync(filler) // room again before the third try
        },
      })
      await backend.get('warm-up') // creates the folders while there is room
      filler = fill(disk!)
      const big = result('t1', 'y'.repeat(64 << 10))
      await backend.store('t1', big, 'SUCCESS')
      assert.deepEqual(retries, [1, 2])
      assert.equal((await backend.get('t1'))?.status, 'SUCCESS')

      retries.length = 0
      freeOnSecondTry = false
      filler = fill(disk!)
      const lost = await backend.store('t2', big, 'SUCCESS').then(
        () => assert.fail('stored on a full disk'),
        (e: Error & { code?: string }) => e,
      )
      assert.match(lost.message, /ENOSPC.*\(gave up after 4 tries\)/)
      assert.equal(lost.code, 'ENOSPC')
      assert.deepEqual(retries, [1, 2, 3])
      assert.deepEqual(readdirSync(join(root, 'results')).sort(), ['t1.json'], 'no partial or temporary file')
      assert.equal(existsSync(join(root, 'results', 't2.json')), false)
      unlinkSync(filler)
    },
  )
})
