// msgpack and yaml with Python Celery 5.2.6
// (Debian's python3-msgpack and python3-yaml), both directions, results
// included, on RabbitMQ (rpc:// results) and Redis (redis:// results); a
// pickle task is refused by a tsq worker, which goes on.
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createApp, type App } from '../../src/index.js'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { BOUNDARY_INTS, MSGPACK_INTS } from './helpers/bigints.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import {
  SEC_BACKEND,
  pyShape,
  pySecClient,
  startPySecWorker,
  startTsqSecWorker,
  type PySecWorker,
  type SecSide,
} from './helpers/security-peers.js'
import type { TsqWorker } from './worker-helpers/tsq-worker.js'

// Integers across the 8/16/32/64-bit edges (msgpack's fixint, int8..int64,
// uint8..uint64), beyond 2**53 (to 10**40 in YAML), unicode with a NUL, YAML 1.1's look-alike
// strings, bytes, nesting, empties and a 256 KiB string.
const INTS = [
  0,
  127,
  128,
  -32,
  -33,
  -128,
  -129,
  255,
  256,
  32767,
  32768,
  -32768,
  -32769,
  65535,
  65536,
  2 ** 31 - 1,
  2 ** 31,
  -(2 ** 31),
  -(2 ** 31) - 1,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 53 - 1,
]
// Past 2**53 every edge to 10**40 for YAML; msgpack holds int64 and uint64 only (Python's packb refuses the rest).
const unsafe = (v: bigint) => v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)
const BIG = { msgpack: MSGPACK_INTS.filter(unsafe), yaml: BOUNDARY_INTS.filter(unsafe) }
const STRINGS = ['h\u00e9llo \u{1F600} \u0000 nul', 'yes', 'no', 'on', '0777', '1_000', '~', 'null', '2024-01-01', '']
const valueFor = (serializer: 'msgpack' | 'yaml'): unknown[] => [
  INTS,
  BIG[serializer],
  STRINGS,
  1.5,
  -0.25,
  true,
  false,
  null,
  { k: [1, { z: null }], '\u00fc': 'x' },
  [],
  {},
  new Uint8Array([0, 1, 0xfe, 0xff]),
  'x'.repeat(256 * 1024),
]

/** The same value as JSON for the Python client: BigInts as digits, bytes as {bytes: hex}. */
function pythonArgs(v: unknown[]): string {
  return JSON.stringify([v], (_k, x: unknown) =>
    typeof x === 'bigint' ? `@@${x}@@` : x instanceof Uint8Array ? { bytes: Buffer.from(x).toString('hex') } : x,
  ).replace(/"@@(-?\d+)@@"/g, '$1')
}

const cases = [
  { kind: 'amqp' as const, broker: AMQP_URL, backend: 'rpc://' },
  { kind: 'redis' as const, broker: REDIS_URL, backend: SEC_BACKEND },
]

// Every probe before any suite starts, so no suite's set-up can stall a later probe.
const skips = new Map(await Promise.all(cases.map(async (c) => [c.kind, await brokerSkipReason(c.kind)] as const)))

for (const c of cases) {
  const brokerSkip = skips.get(c.kind)
  for (const serializer of ['msgpack', 'yaml'] as const) {
    describe(
      `${serializer} with Python Celery 5.2.6: ${c.kind} broker, ${c.backend} results`,
      { skip: brokerSkip, timeout: 240_000 },
      () => {
        // JSON is not accepted here: accept_content names the one serializer, result_accept_content follows it, as in Celery.
        const conf = { task_serializer: serializer, result_serializer: serializer, accept_content: [serializer] }
        const VALUE = valueFor(serializer)
        const tsqQueue = uniqueName(`sec-${c.kind}-${serializer}-tsqw`)
        const pyQueue = uniqueName(`sec-${c.kind}-${serializer}-pyw`)
        const side = (queue: string): SecSide => ({ broker: c.broker, backend: c.backend, queue, conf })
        let tsqWorker: TsqWorker | undefined
        let pyWorker: PySecWorker | undefined
        let app: App | undefined
        let dir = ''
        const logs = () =>
          `\n--- tsq worker ---\n${tsqWorker?.logTail().slice(-6000) ?? ''}\n--- Python worker ---\n${pyWorker?.logTail().slice(-6000) ?? ''}`

        before(async () => {
          dir = mkdtempSync(join(tmpdir(), 'tsq-sec-ser-'))
          ;[tsqWorker, pyWorker] = await Promise.all([startTsqSecWorker(side(tsqQueue)), startPySecWorker(side(pyQueue))])
          app = createApp({ name: 'sec', broker: c.broker, resultBackend: c.backend, conf })
        })

        after(async () => {
          await app?.close().catch(() => undefined)
          await tsqWorker?.stop()
          await pyWorker?.stop()
          await deleteCeleryQueues(c.kind, c.broker, [tsqQueue, pyQueue])
          if (dir) rmSync(dir, { recursive: true, force: true })
        })

        it(`Python sends ${serializer} to the tsq worker and reads its ${serializer} result: every value back as sent`, async () => {
          const file = join(dir, 'args.json')
          writeFileSync(file, pythonArgs(VALUE))
          const out = await pySecClient(side(tsqQueue), ['call', 'sec.echo', `@${file}`, '40'])
          assert.equal(out.state, 'SUCCESS', JSON.stringify(out).slice(0, 2000) + logs())
          assert.deepEqual(out.result, pyShape(VALUE), logs())
        })

        it(`tsq sends ${serializer} to the Python worker and reads its ${serializer} result: every value back as sent`, async () => {
          const r = await app!.sendTask('sec.echo', [VALUE], {}, { queue: pyQueue })
          const got = await r.get({ timeout: 40 })
          assert.deepEqual(pyShape(got), pyShape(VALUE), logs())
          // Small ints are numbers, past 2**53 BigInts, bytes Uint8Array: the JS shapes, not only the values.
          const [ints, big, , , , , , , , , , bytes] = got as unknown[]
          assert.ok((ints as unknown[]).every((i) => typeof i === 'number'))
          assert.ok((big as unknown[]).every((i) => typeof i === 'bigint'))
          assert.ok(bytes instanceof Uint8Array)
        })

        if (serializer === 'msgpack') {
          it('a pickle task is refused by the tsq worker, which runs the next task', async () => {
            const logStart = tsqWorker!.log.length
            const pickled = await pySecClient(side(tsqQueue), ['send', 'sec.add', '[1, 2]', 'pickle'])
            const next = await pySecClient(side(tsqQueue), ['call', 'sec.add', '[40, 2]', '40'])
            assert.deepEqual(next.result, { int: '42' }, JSON.stringify(next) + logs())
            assert.equal(await app!.asyncResult(pickled.id).state, 'PENDING', logs())
            assert.match(
              tsqWorker!.log.slice(logStart),
              new RegExp(
                `Received invalid task message \\(rejected, not requeued\\): Refusing to deserialize pickle content \\(application/x-python-serialize\\): tsq never unpickles.* sec\\.add\\[${pickled.id}\\]`,
              ),
              logs(),
            )
          })

          it('a JSON task is refused by a worker whose accept_content is msgpack alone', async () => {
            const logStart = tsqWorker!.log.length
            const json = createApp({
              name: 'sec',
              broker: c.broker,
              resultBackend: c.backend,
              conf: { result_accept_content: ['msgpack'] },
            })
            try {
              const r = await json.sendTask('sec.add', [1, 1], {}, { queue: tsqQueue })
              const next = await app!.sendTask('sec.add', [2, 2], {}, { queue: tsqQueue })
              assert.equal(await next.get({ timeout: 40 }), 4, logs())
              assert.match(
                tsqWorker!.log.slice(logStart),
                new RegExp(`Refusing to deserialize untrusted content of type json \\(application/json\\) sec\\.add\\[${r.id}\\]`),
                logs(),
              )
            } finally {
              await json.close()
            }
          })
        }
      },
    )
  }
}
