// Mingle (issue 4, item 4): at start-up a worker asks its peers (`hello`) for
// their revoked ids and merges them, unless --without-mingle.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

const skip = await brokerSkipReason('redis')

describe('mingle: revokes travel to a worker that starts later', { skip }, () => {
  const workers: SpawnedWorker[] = []
  const queue = uniqueName('tsq-mingle')
  after(async () => {
    for (const w of workers) await w.stop()
    await deleteCeleryQueues('redis', REDIS_URL, [queue])
  })
  const start = async (name: string, extra: string[] = []) => {
    const w = await startWorker(
      ['-A', 'examples/tasks.js', '-b', REDIS_URL, '-Q', queue, '-c', '1', '-l', 'INFO', '--without-heartbeat', ...extra],
      { nodename: `${name}-${queue}@testhost` },
    )
    workers.push(w)
    return w
  }
  const revoked = async (node: string) => {
    const r = await runTsq(['inspect', 'revoked', '-d', node, '--json', '-b', REDIS_URL])
    assert.equal(r.code, 0, r.stderr)
    return JSON.parse(r.stdout)[node] as string[]
  }

  it("a new worker merges its peer's revoked ids; --without-mingle does not", async () => {
    const first = await start('m1', ['--without-mingle'])
    const id = `mingle-${queue}`
    const r = await runTsq(['control', 'revoke', id, '-d', first.nodename, '-b', REDIS_URL])
    assert.equal(r.code, 0, r.stderr)
    const second = await start('m2')
    assert.match(second.output(), /mingle: sync with \d+ nodes/)
    assert.ok((await revoked(second.nodename)).includes(id))
    const third = await start('m3', ['--without-mingle'])
    assert.ok(!(await revoked(third.nodename)).includes(id))
  })
})
