// Integers in AMQP header tables cross between tsq and
// Python Celery (py-amqp 5.1.1) on RabbitMQ exactly, both ways.
//
// amqplib wrote an integer with the narrowest tag, `b` (8-bit) or `s`
// (16-bit): py-amqp reads `b` unsigned (-1 arrived as 255) and `s` as a short
// *string* (a time limit of 300, a clock of 288), which garbled the rest of the
// table or killed the Python side's connection (FrameSyntaxError). And amqplib
// could not read py-amqp's `L`, written for every integer past ±(2**31-1), so a
// message from Python with such a header killed the tsq worker's connection.
//
// One Python worker (Celery 5.2.6) and one tsq worker serve the whole file.
// The tsq worker reaches RabbitMQ through a frame-aware TCP proxy (below): it
// rewrites the type tag of one marked header in what the broker delivers, which
// is the only way to hand tsq a table with a tag no client writes — RabbitMQ
// 3.10 parses every header table routed to a queue and closes the publisher's
// connection (541 INTERNAL_ERROR) on an unknown tag. The proxy also counts the
// worker's connections, so "it never reconnected" is checked, not assumed.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createApp, type App } from '../../src/index.js'
import amqplib from '../../src/transport/amqp/amqplib.js'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { deleteCeleryQueues, deleteResults } from './helpers/cleanup.js'
import {
  PY_DIR,
  PYTHON,
  REPO_ROOT,
  parseJsonOut,
  run,
  runTsq,
  startPythonWorker,
  type PeerEnv,
  type PythonWorker,
} from './helpers/python-worker.js'
import { celeryJson, pushWorkerClock, startTsqWorker, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'

const BACKEND = 'redis://127.0.0.1:6379/1'
const FIXTURE = resolve(REPO_ROOT, 'test/fixtures/tasks/int-headers-tasks.js')
const skip = await brokerSkipReason('amqp')

// ---- the values --------------------------------------------------------

/** Every width boundary of b/B, s/U/u, I/i and a double's exact range, both signs. */
const VALUES: readonly number[] = [
  0,
  127,
  128,
  255,
  256,
  32767,
  32768,
  65535,
  65536,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32,
  2 ** 40,
  2 ** 53 - 1,
  -1,
  -127,
  -128,
  -129,
  -255,
  -256,
  -32767,
  -32768,
  -32769,
  -(2 ** 31 - 1),
  -(2 ** 31),
  -(2 ** 40),
  -(2 ** 53 - 1),
]
/** Past a double: exact only as a BigInt in JS. */
const BIG: Readonly<Record<string, bigint>> = { ih_i64max: 2n ** 63n - 1n, ih_i64min: -(2n ** 63n), ih_2p53p1: 2n ** 53n + 1n }
const key = (n: number) => `ih_${n < 0 ? 'm' : 'p'}${Math.abs(n)}`

/** The test's own headers: each value alone, as one array and as one nested table. */
const CUSTOM: Readonly<Record<string, unknown>> = {
  ...Object.fromEntries(VALUES.map((n) => [key(n), n])),
  ...BIG,
  ih_list: [...VALUES, ...Object.values(BIG)],
  ih_table: { ...Object.fromEntries(VALUES.map((n) => [key(n), n])), ...BIG },
}

/**
 * [hard, soft] time limits: 16-bit and 32-bit edges. To the tsq worker only
 * those below 2147484 s: a longer one overflows Node's 32-bit timer and the
 * task is killed at once (a src bug of its own, reported separately).
 */
const LIMITS_TO_PY: readonly [number | null, number | null][] = [
  [300, 200],
  [128, 127],
  [32768, 32767],
  [256, 255],
  [2 ** 31, 2 ** 31 - 1],
  [null, 32768],
  [65536, null],
]
const LIMITS_TO_TSQ: readonly [number | null, number | null][] = [
  [300, 200],
  [128, 127],
  [32768, 32767],
  [256, 255],
  [null, 32768],
  [65536, null],
  [2147483, 2147483],
]

interface Case {
  retries: number
  groupIndex: number
  limits: readonly [number | null, number | null]
}

function cases(limits: readonly (readonly [number | null, number | null])[]): Case[] {
  return VALUES.map((n, i) => ({ retries: n, groupIndex: VALUES[(i + 7) % VALUES.length]!, limits: limits[i % limits.length]! }))
}

/** A value as Python's int_headers_tasks.tag() writes it: its type kept, integers as exact digits. */
function tag(value: unknown): unknown {
  if (value === null || value === undefined) return null
  if (typeof value === 'boolean') return `bool:${value ? 'True' : 'False'}`
  if (typeof value === 'bigint') return `int:${value}`
  if (typeof value === 'number') return Number.isInteger(value) ? `int:${value}` : `float:${value}`
  if (typeof value === 'string') return `str:${value}`
  if (Array.isArray(value)) return value.map(tag)
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, tag(v)]))
}

/** JSON for Python with each BigInt as its bare digits (json.loads reads them as exact ints). */
function pyJson(value: unknown): string {
  const mark = '\u0000big:'
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${mark}${v}` : v)).replace(/"\\u0000big:(-?\d+)"/g, '$1')
}

// ---- a frame-aware proxy that can corrupt one header tag ---------------

/**
 * Between the tsq worker and RabbitMQ: passes everything through, but in the
 * content-header frames the broker sends it replaces `from` with `to` (same
 * length, so every frame stays in step), and counts the connections that
 * ended while it was not closing: a worker that lost its connection shows.
 */
class RewritingProxy {
  private readonly server = createServer((client) => this.pipe(client))
  private readonly sockets = new Set<Socket>()
  private closing = false
  accepted = 0
  dropped = 0
  rewritten = 0

  constructor(
    private readonly upstream: { host: string; port: number },
    private readonly from: Buffer,
    private readonly to: Buffer,
  ) {}

  listen(): Promise<number> {
    return new Promise((done, fail) => {
      this.server.once('error', fail)
      this.server.listen(0, '127.0.0.1', () => done((this.server.address() as AddressInfo).port))
    })
  }

  private pipe(client: Socket): void {
    this.accepted += 1
    const broker = connect(this.upstream.port, this.upstream.host)
    this.sockets.add(client).add(broker)
    let pending: Buffer = Buffer.alloc(0)
    broker.on('data', (chunk: Buffer) => {
      pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk
      // A frame: type (1), channel (2), size (4), payload, 0xCE.
      let end = 0
      while (pending.length - end >= 7) {
        const frameEnd = end + 7 + pending.readUInt32BE(end + 3) + 1
        if (pending.length < frameEnd) break
        if (pending[end] === 2) this.rewrite(pending.subarray(end + 7, frameEnd - 1))
        end = frameEnd
      }
      if (end > 0) client.write(pending.subarray(0, end))
      pending = pending.subarray(end)
    })
    client.pipe(broker)
    let ended = false
    const end = () => {
      if (!ended && !this.closing) this.dropped += 1
      ended = true
      client.destroy()
      broker.destroy()
      this.sockets.delete(client)
      this.sockets.delete(broker)
    }
    for (const s of [client, broker]) {
      s.on('error', () => {})
      s.on('close', end)
    }
  }

  private rewrite(payload: Buffer): void {
    const at = payload.indexOf(this.from)
    if (at === -1) return
    this.to.copy(payload, at)
    this.rewritten += 1
  }

  async close(): Promise<void> {
    this.closing = true
    for (const s of this.sockets) s.destroy()
    await new Promise((done) => this.server.close(done))
  }
}

/** A string header py-amqp writes as S + length + bytes; the proxy turns its S into Q, a tag no client writes. */
const POISON = 'TSQ-UNREADABLE-HEADER'
function longstr(tagChar: string, text: string): Buffer {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(Buffer.byteLength(text))
  return Buffer.concat([Buffer.from(tagChar), len, Buffer.from(text)])
}

// ---- broker admin for the dead-letter check ----------------------------

/** Runs rabbitmqctl on this host; false when the broker is not local, the tool is missing or the command fails. */
async function rabbitmqctl(args: readonly string[]): Promise<boolean> {
  const host = new URL(AMQP_URL).hostname
  if (host !== '127.0.0.1' && host !== 'localhost') return false
  const tool = ['/usr/sbin/rabbitmqctl', '/usr/lib/rabbitmq/bin/rabbitmqctl'].find((p) => existsSync(p))
  if (!tool) return false
  try {
    const res = await run(tool, args, { timeoutMs: 30_000 })
    return res.code === 0
  } catch {
    return false
  }
}

function vhostOf(url: string): string {
  const path = new URL(url).pathname
  return path === '' || path === '/' ? '/' : decodeURIComponent(path.slice(1))
}

// ---- the suite ----------------------------------------------------------

describe('integers in AMQP header tables, tsq <-> Python Celery on RabbitMQ (issue 28)', { skip }, () => {
  const pyQueue = uniqueName('tsq-ih-py')
  const plainQueue = `${pyQueue}-plain`
  const tsqQueue = uniqueName('tsq-ih-tsq')
  const dlx = `${tsqQueue}-dlx`
  const deadQueue = `${tsqQueue}-dead`
  const policy = `${tsqQueue}-dl`
  const peer: PeerEnv = { broker: AMQP_URL, backend: BACKEND, queue: pyQueue }
  /** Python's side of the tsq worker: straight to RabbitMQ, the same queue. */
  const wiEnv: WiEnv = { broker: AMQP_URL, backend: BACKEND, queue: tsqQueue }
  const taskIds: string[] = []
  let app: App | undefined
  let pyWorker: PythonWorker | undefined
  let tsqWorker: TsqWorker | undefined
  let proxy: RewritingProxy | undefined
  let deadLettering = false
  let node = ''

  before(async () => {
    app = createApp({ name: 'ih-client', broker: AMQP_URL, resultBackend: BACKEND })
    const upstream = new URL(AMQP_URL)
    proxy = new RewritingProxy({ host: upstream.hostname, port: Number(upstream.port || 5672) }, longstr('S', POISON), longstr('Q', POISON))
    const proxied = new URL(AMQP_URL)
    proxied.port = String(await proxy.listen())

    // The dead-letter route: a policy, since tsq (like Celery) declares its queue without arguments.
    const conn = await amqplib.connect(AMQP_URL)
    try {
      const ch = await conn.createChannel()
      await ch.assertExchange(dlx, 'fanout', { durable: false, autoDelete: false })
      await ch.assertQueue(deadQueue, { durable: false, autoDelete: false })
      await ch.bindQueue(deadQueue, dlx, '')
      await ch.close()
    } finally {
      await conn.close()
    }
    deadLettering = await rabbitmqctl([
      'set_policy',
      '-p',
      vhostOf(AMQP_URL),
      '--apply-to',
      'queues',
      '--priority',
      '100',
      policy,
      `^${tsqQueue}$`,
      JSON.stringify({ 'dead-letter-exchange': dlx }),
    ])

    // Both at once; each one that started is kept, so after() stops it even when the other failed.
    const [py, tsq] = await Promise.allSettled([
      startPythonWorker({ peer, extraArgs: ['-I', 'int_headers_tasks'] }).then((w) => (pyWorker = w)),
      startTsqWorker({ env: { ...wiEnv, broker: proxied.toString() }, module: FIXTURE, pool: 'prefork', concurrency: 2 }).then(
        (w) => (tsqWorker = w),
      ),
    ])
    for (const started of [py, tsq]) if (started.status === 'rejected') throw started.reason
    node = tsqWorker!.nodename
  })

  after(async () => {
    await Promise.all([pyWorker?.stop(), tsqWorker?.stop()])
    await proxy?.close()
    await app?.close()
    if (deadLettering) await rabbitmqctl(['clear_policy', '-p', vhostOf(AMQP_URL), policy])
    await deleteCeleryQueues('amqp', AMQP_URL, [pyQueue, plainQueue, tsqQueue, deadQueue, dlx])
    await deleteResults(BACKEND, taskIds)
  })

  const pyLog = (msg: string) => `${msg}\n--- python worker log ---\n${pyWorker?.logTail() ?? ''}`
  const tsqLog = (msg: string) => `${msg}\n--- tsq worker log ---\n${tsqWorker?.logTail() ?? ''}`

  async function intHeaders<T>(args: readonly string[], timeoutMs = 60_000): Promise<T> {
    const env = {
      ...process.env,
      PYTHONPATH: PY_DIR,
      PYTHONDONTWRITEBYTECODE: '1',
      TSQ_WI_BROKER: wiEnv.broker,
      TSQ_WI_BACKEND: wiEnv.backend,
      TSQ_WI_QUEUE: wiEnv.queue,
    }
    const res = await run(PYTHON, [resolve(PY_DIR, 'int_headers.py'), ...args], { cwd: PY_DIR, env, timeoutMs })
    if (res.code !== 0) throw new Error(`int_headers.py ${args[0]} exited ${res.code}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`)
    return parseJsonOut(res, `int_headers.py ${args[0]}`) as T
  }

  /** A task's result; a failure to get one says what the worker logged. */
  async function resultOf(id: string, timeoutS: number, withLog: (msg: string) => string): Promise<unknown> {
    try {
      return await app!.asyncResult(id).get({ timeout: timeoutS })
    } catch (error) {
      return assert.fail(withLog(`${id}: ${(error as Error).message}`))
    }
  }

  /** ih.echo sent by tsq's JS client with each case's retries, group_index and time limits, and CUSTOM. */
  async function sendCases(queue: string, list: readonly Case[]): Promise<string[]> {
    const ids: string[] = []
    for (const c of list) {
      const res = await app!.sendTask(
        'ih.echo',
        [],
        {},
        { queue, headers: { ...CUSTOM }, retries: c.retries, groupIndex: c.groupIndex, timeLimit: c.limits[0], softTimeLimit: c.limits[1] },
      )
      ids.push(res.id)
    }
    taskIds.push(...ids)
    return ids
  }

  it('tsq -> Python worker: every boundary integer, timelimit, retries and group_index read back exactly (JS client and tsq call)', async () => {
    const list = cases(LIMITS_TO_PY)
    const ids = await sendCases(pyQueue, list)
    const cli = await Promise.all(
      [
        ['300', '200'],
        ['32768', '128'],
      ].map(async ([hard, soft]) => {
        const res = await runTsq([
          'call',
          'ih.echo',
          '-b',
          AMQP_URL,
          '--result-backend',
          BACKEND,
          '-Q',
          pyQueue,
          '--time-limit',
          hard!,
          '--soft-time-limit',
          soft!,
          '-j',
        ])
        assert.equal(res.code, 0, res.stderr)
        const { id } = JSON.parse(res.stdout) as { id: string }
        taskIds.push(id)
        return { id, limits: [Number(hard), Number(soft)] }
      }),
    )
    const results = await Promise.all([...ids, ...cli.map((c) => c.id)].map((id) => resultOf(id, 30, pyLog)))
    list.forEach((c, i) => {
      assert.deepEqual(
        results[i],
        { timelimit: tag(c.limits), retries: tag(c.retries), group_index: tag(c.groupIndex), headers: tag(CUSTOM) },
        pyLog(`case ${i}: retries ${c.retries}, group_index ${c.groupIndex}, timelimit ${JSON.stringify(c.limits)}`),
      )
    })
    cli.forEach((c, i) => {
      assert.deepEqual(
        results[list.length + i],
        { timelimit: tag(c.limits), retries: 'int:0', group_index: null, headers: {} },
        pyLog(`tsq call --time-limit ${c.limits[0]} --soft-time-limit ${c.limits[1]}`),
      )
    })
  })

  it('tsq -> plain kombu consumer (py-amqp): every header of every message is the int that was sent', async () => {
    const list = cases(LIMITS_TO_PY)
    const ids = await sendCases(plainQueue, list)
    const { messages } = await intHeaders<{ messages: { id: string; headers: Record<string, unknown> }[] }>([
      'consume',
      plainQueue,
      String(ids.length),
      '20',
    ])
    assert.deepEqual(
      messages.map((m) => m.id),
      ids,
    )
    messages.forEach((m, i) => {
      const c = list[i]!
      const want = {
        timelimit: tag(c.limits),
        retries: tag(c.retries),
        group_index: tag(c.groupIndex),
        ...(tag(CUSTOM) as Record<string, unknown>),
      }
      const got = Object.fromEntries(Object.keys(want).map((k) => [k, m.headers[k]]))
      assert.deepEqual(got, want, `message ${i} (${m.id})`)
      // Celery's own headers are read alike: strings stay strings, None stays None.
      assert.equal(m.headers.task, 'str:ih.echo')
      assert.equal(m.headers.ignore_result, 'bool:False')
      assert.equal(m.headers.eta, null)
    })
  })

  it('the Python worker stayed connected: no FrameSyntaxError, no reconnect, and an ordinary task still runs', async () => {
    const res = await app!.sendTask('proj.add', [40, 2], {}, { queue: pyQueue })
    taskIds.push(res.id)
    assert.equal(await resultOf(res.id, 20, pyLog), 42, pyLog('proj.add after the header cases'))
    const log = pyWorker!.log
    assert.doesNotMatch(
      log,
      /FrameSyntaxError|Connection to broker lost|Cannot connect|Unrecoverable error/,
      pyLog('the Python worker lost its connection'),
    )
    assert.doesNotMatch(log, /Received invalid task|ERROR\/MainProcess/, pyLog('the Python worker refused a message'))
  })

  it('Python send_task(headers=...) -> tsq worker: boundary integers, 2**40 and +-2**63 arrive exactly, retries too', async () => {
    const specs = cases(LIMITS_TO_TSQ).map((c) => ({
      headers: CUSTOM,
      retries: c.retries,
      group_index: c.groupIndex,
      time_limit: c.limits[0],
      soft_time_limit: c.limits[1],
    }))
    const { items } = await intHeaders<{
      items: { id: string; error?: string; got?: unknown; want?: unknown; types?: Record<string, unknown> }[]
    }>(['send_tsq', pyJson(specs), '30'])
    taskIds.push(...items.map((x) => x.id))
    assert.equal(items.length, specs.length)
    for (const [i, item] of items.entries()) {
      assert.equal(item.error, undefined, tsqLog(`case ${i}: ${item.error}`))
      assert.deepEqual(item.got, item.want, tsqLog(`case ${i} (${item.id})`))
    }
    // What the task saw in JS: a number within 2**53, a BigInt beyond it.
    const types = items[0]!.types!
    for (const n of VALUES) assert.equal(types[key(n)], 'number', key(n))
    for (const k of Object.keys(BIG)) assert.equal(types[k], 'bigint', k)
    assert.deepEqual(types.ih_list, [...VALUES.map(() => 'number'), ...Object.keys(BIG).map(() => 'bigint')])
    assert.equal(proxy!.dropped, 0, tsqLog('the tsq worker lost a connection'))
  })

  it('a header table with an unknown tag (Q): logged, rejected without requeue (dead-lettered), the worker goes on', async (t) => {
    const before = proxy!.rewritten
    const { id: poisoned } = await intHeaders<{ id: string }>(['send', 'ih.echo', '[]', JSON.stringify({ ih_poison: POISON })])
    taskIds.push(poisoned)
    const line = String.raw`ERROR/MainProcess\] Received invalid task message \(rejected, not requeued\): unreadable header table: unknown field type tag "Q" \(0x51\) at byte \d+ \[queue=${tsqQueue} tag=\S+\]$`
    const lines = () => tsqWorker!.log.match(new RegExp(line, 'gm'))?.length ?? 0
    await waitFor(() => lines() > 0, { timeoutMs: 15_000, what: 'the rejection line' }).catch((e: Error) => assert.fail(tsqLog(e.message)))
    assert.equal(proxy!.rewritten, before + 1, 'the proxy turned exactly one S into Q')

    // The next message runs, on the same connection.
    const { id: next } = await intHeaders<{ id: string }>(['send', 'proj.add', '[2, 3]', '{}'])
    taskIds.push(next)
    assert.equal(await resultOf(next, 20, tsqLog), 5, tsqLog('proj.add after the unreadable message'))
    assert.equal(proxy!.dropped, 0, tsqLog('the tsq worker lost a connection'))

    // Rejected once, not requeued: one line, nothing left in the queue, no result for it.
    assert.equal(lines(), 1, tsqLog('the unreadable message came back'))
    assert.doesNotMatch(tsqWorker!.log, new RegExp(`ih\\.echo\\[${poisoned}\\]`), tsqLog('the unreadable message was run'))
    assert.equal(await app!.asyncResult(poisoned).state, 'PENDING')
    const conn = await amqplib.connect(AMQP_URL)
    try {
      const ch = await conn.createChannel()
      assert.equal((await ch.checkQueue(tsqQueue)).messageCount, 0)
      await ch.close()
    } finally {
      await conn.close()
    }

    if (!deadLettering) {
      t.skip('no rabbitmqctl for a dead-letter policy here; checked only that it was not requeued')
      return
    }
    // RabbitMQ's own copy of the message is intact (the proxy changed only what tsq read).
    const dead = await intHeaders<{ found: boolean; id?: string; headers?: Record<string, unknown>; reason?: string; queue?: string }>([
      'dead',
      deadQueue,
      '10',
    ])
    assert.deepEqual(dead, { found: true, id: poisoned, headers: { ih_poison: `str:${POISON}` }, reason: 'rejected', queue: tsqQueue })
  })

  it('celery inspect ping / active answer a tsq worker whose clock is past 128, 32768 and 2**31', async () => {
    const start = await pushWorkerClock(wiEnv, node, 0)
    assert.deepEqual(start.ping, { [node]: { ok: 'pong' } })
    assert.ok(
      typeof start.clock === 'number' && start.clock < 128,
      `a fresh worker without mingle/gossip counts from 0: ${JSON.stringify(start)}`,
    )
    for (const target of [300, 40_000, 2 ** 31 + 10]) {
      const push = await pushWorkerClock(wiEnv, node, target)
      assert.deepEqual(push.ping, { [node]: { ok: 'pong' } }, tsqLog(`ping at ${target}`))
      assert.equal(push.header_clocks.length, 2, JSON.stringify(push))
      for (const [type, value] of push.header_clocks) {
        assert.equal(type, 'int', `reply clock header read by py-amqp: ${JSON.stringify(push.header_clocks)}`)
        assert.ok(
          (value as number) > target + 2 && (value as number) < target + 200,
          `reply clock ${String(value)} after a request at ${target + 2}`,
        )
      }
      assert.ok(push.clock! > target + 2 && push.clock! < target + 200, `inspect clock ${push.clock} after ${target}`)
      // Celery's CLI, a fresh process with its own clock at 0, reads the worker's.
      const [ping, active] = (await Promise.all([
        celeryJson(wiEnv, ['inspect', 'ping', '-d', node, '-t', '5']),
        celeryJson(wiEnv, ['inspect', 'active', '-d', node, '-t', '5']),
      ])) as Record<string, unknown>[]
      assert.deepEqual(ping, { [node]: { ok: 'pong' } }, tsqLog(`celery inspect ping at ${target}`))
      assert.deepEqual(active, { [node]: [] }, tsqLog(`celery inspect active at ${target}`))
    }
  })

  it('the tsq worker never lost its broker connection', () => {
    assert.ok(proxy!.accepted > 0, 'the worker connected through the proxy')
    assert.equal(proxy!.dropped, 0, tsqLog(`${proxy!.dropped} of ${proxy!.accepted} connections through the proxy ended`))
    assert.doesNotMatch(
      tsqWorker!.log,
      /Connection to broker lost|Unexpected type tag|FrameSyntaxError/,
      tsqLog('the tsq worker lost its connection'),
    )
    assert.equal(tsqWorker!.hasExited, false)
  })
})
