// `tsq graph` (issue 26 item 6): bootsteps drawn from the list the worker
// follows (a worker at DEBUG logs its steps in the same order), workers from
// live `inspect stats` replies; both accepted by Graphviz (`dot -Tsvg`).
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { hostname } from 'node:os'
import { after, before, describe, it } from 'node:test'
import { AMQP_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { ROOT, runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

const NO_BROKER_ENV = { TSQ_BROKER_URL: '', CELERY_BROKER_URL: '', TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '' }

function dotAvailable(): string | false {
  if (spawnSync('dot', ['-V']).status === 0) return false
  const reason = 'Graphviz `dot` not installed (apt-get install graphviz); skipping the rendering checks'
  if (process.env.CI) throw new Error(`CI requires ${reason}`)
  return reason
}

/** The SVG Graphviz makes of `dot`, which fails (and throws) on text it cannot read. */
function render(dot: string): string {
  return execFileSync('dot', ['-Tsvg'], { input: dot, encoding: 'utf8' })
}

const skip = (await brokerSkipReason('amqp')) || dotAvailable()
describe('tsq graph', { skip }, () => {
  const node = `${uniqueName('graph')}@${hostname()}`
  const queue = uniqueName('graph-q')
  let worker: SpawnedWorker | undefined

  before(async () => {
    worker = await startWorker(
      [
        '-A',
        `${ROOT}test/fixtures/tasks/interop-tasks.js`,
        '-b',
        AMQP_URL,
        '-Q',
        queue,
        '-P',
        'threads',
        '-c',
        '3',
        '-l',
        'DEBUG',
        '--without-mingle',
        '--without-gossip',
      ],
      { nodename: node, env: NO_BROKER_ENV },
    )
  })

  after(async () => {
    await worker?.stop()
    await deleteCeleryQueues('amqp', AMQP_URL, [queue])
  })

  it('bootsteps: the steps the worker started, in its order, with their dependencies; dot renders it', async () => {
    const json = await runTsq(['graph', 'bootsteps', '--json'], { env: NO_BROKER_ENV })
    assert.equal(json.code, 0, json.stderr)
    const steps = JSON.parse(json.stdout) as Array<{ name: string; requires: string[]; conditional: boolean }>
    const started = [...worker!.output().matchAll(/\| Worker: Starting (\w+)/g)].map((m) => m[1])
    // This worker has no backend, events app, autoscaler, statedb, mingle or gossip: every other step, in the graph's order.
    const expected = steps
      .filter((s) => !['Bus', 'Backend', 'Autoscaler', 'StateDB', 'Mingle', 'Gossip'].includes(s.name))
      .map((s) => s.name)
    assert.deepEqual(started, expected)
    const dot = await runTsq(['graph', 'bootsteps'], { env: NO_BROKER_ENV })
    assert.equal(dot.code, 0, dot.stderr)
    assert.match(
      dot.stdout,
      /^digraph dependencies \{\n {4}graph \[shape="box", arrowhead="vee", style="filled", fontname="HelveticaNeue", bgcolor="mintcream", root="⧉Worker"\]\n/,
    )
    assert.match(dot.stdout, /^ {4}"Tasks" -> "Pool" \[/m)
    assert.match(dot.stdout, /^ {4}"Consumer" -> "∘Gossip" \[/m)
    assert.match(render(dot.stdout), /<svg/)
  })

  it("workers: the broker, each worker that replied to inspect stats and its pool's threads; dot renders it", async () => {
    const r = await runTsq(['-b', AMQP_URL, 'graph', 'workers', '-t', '3'], { env: NO_BROKER_ENV })
    assert.equal(r.code, 0, r.stderr)
    const broker = AMQP_URL.replace(/:[^:@/]*@/, ':**@')
    assert.match(r.stdout, new RegExp(`^    "${broker.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}" \\[shape="circle"`, 'm'))
    // The other lanes' workers may answer too; this one is there, with its 3 threads (3 is the most Celery draws unabbreviated).
    const edge = new RegExp(`^    "(thr-\\d+)" -> "${node.replace(/[.]/g, '\\.')}" \\[.*arrowhead="none".*arrowtail="tee"\\]$`, 'gm')
    const threads = [...r.stdout.matchAll(edge)].map((m) => m[1])
    assert.equal(threads.length, 3, r.stdout)
    const labels = threads.map((t) => new RegExp(`^    "${t}" \\[.*label="([^"]+)"\\]$`, 'm').exec(r.stdout)?.[1])
    assert.deepEqual(labels, ['0', '1', '2'])
    assert.match(render(r.stdout), /<svg/)
  })
})
