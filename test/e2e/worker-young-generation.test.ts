// A worker and its prefork children start with V8's young generation held
// small: it is set before their code loads, since loading tsq and the task
// module grew it to 8 MB of semi-spaces, which V8 keeps for the life of an
// idle process (7 MB of anonymous memory in each process).
import assert from 'node:assert/strict'
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { ROOT, embeddedBrokerEnv, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'

const MB = 1024 * 1024

describe('the young generation of a worker at rest (file://)', () => {
  const home = tempTsqHome()
  let worker: SpawnedWorker | undefined

  after(async () => {
    await worker?.stop()
    rmSync(home, { recursive: true, force: true })
  })

  it('prefork -c 2: the main process and each child hold at most 2 MB of new space once ready', async () => {
    const probes = join(home, 'probes')
    mkdirSync(probes)
    const probe = join(ROOT, 'test/fixtures/young-generation-probe.mjs')
    worker = await startWorker(
      [
        '-A',
        join(ROOT, 'test/fixtures/tasks/noop-tasks.js'),
        '-P',
        'prefork',
        '-c',
        '2',
        '-l',
        'INFO',
        '--without-mingle',
        '--without-gossip',
      ],
      {
        // The trick under test, whatever switches the run's environment sets.
        env: embeddedBrokerEnv(home, {
          NODE_OPTIONS: `--import=${probe}`,
          TSQ_TEST_PROBE_DIR: probes,
          TSQ_NO_TRICKS: '',
          TSQ_NO_YOUNG_GENERATION: '',
        }),
        nodename: `younggen-${process.pid}@${hostname()}`,
        readyTimeoutMs: 90_000,
      },
    )
    // A probe's file being written is `<pid>.tmp` until it is renamed into place.
    const figures = () => readdirSync(probes).filter((name) => !name.endsWith('.tmp'))
    // Ready means the children have loaded the task module; each then writes its figure within 200 ms.
    const deadline = Date.now() + 10_000
    while (figures().length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    await new Promise((r) => setTimeout(r, 500))
    const sizes = Object.fromEntries(figures().map((pid) => [pid, Number(readFileSync(join(probes, pid), 'utf8')) / MB]))
    assert.equal(Object.keys(sizes).length, 3, `one figure per process: ${JSON.stringify(sizes)}`)
    for (const [pid, mb] of Object.entries(sizes))
      assert.ok(mb > 0 && mb <= 2, `process ${pid}: new space ${mb} MB\n${worker.output().slice(-2000)}`)
  })
})
