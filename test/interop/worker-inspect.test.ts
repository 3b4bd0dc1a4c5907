// Celery's own tools (python3 -m celery inspect/control,
// app.control) drive a prefork tsq worker and get Celery-shaped replies.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AMQP_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { deleteCeleryQueues, deleteResults } from './helpers/cleanup.js'
import { celery, celeryJson, pushWorkerClock, pyClient, startTsqWorker, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'

const BACKEND = 'redis://127.0.0.1:6379/1'
const skip = await brokerSkipReason('amqp')

type Replies = Record<string, unknown>
type Rec = Record<string, unknown>

describe('celery inspect/control against a tsq prefork worker (amqp, redis results)', { skip }, () => {
  const env: WiEnv = { broker: AMQP_URL, backend: BACKEND, queue: uniqueName('tsq-wi-ctl') }
  const extraQueue = `${env.queue}-extra`
  const taskIds: string[] = []
  let worker: TsqWorker | undefined
  let node = ''

  before(async () => {
    worker = await startTsqWorker({ env, pool: 'prefork', concurrency: 2 })
    node = worker.nodename
    // Without mingle and gossip (startTsqWorker's default) the worker's clock
    // counts from 0, and this file's requests alone would keep it below 128,
    // where an 8-bit header was read alike by both sides. Push it into the
    // 16-bit range (128..32767), where tsq once wrote the reply's `clock`
    // header with a tag py-amqp misread (issue 28), so every reply below
    // carries a clock there and the suite cannot pass by luck.
    const pushed = await pushWorkerClock(env, node, 296)
    assert.deepEqual(pushed.ping, { [node]: { ok: 'pong' } }, `clock push: ${JSON.stringify(pushed)}`)
    const clock = pushed.clock
    assert.ok(typeof clock === 'number' && clock >= 128 && clock <= 32767, `worker clock ${String(clock)} must lie in 128..32767`)
    assert.ok(
      pushed.header_clocks.every(([type]) => type === 'int'),
      `reply clock headers as py-amqp read them: ${JSON.stringify(pushed.header_clocks)}`,
    )
  })

  after(async () => {
    await worker?.stop()
    await deleteCeleryQueues('amqp', AMQP_URL, [env.queue, extraQueue])
    await deleteResults(BACKEND, taskIds)
  })

  const withLog = (msg: string) => `${msg}\n--- tsq worker log ---\n${worker?.logTail() ?? ''}`

  /** `celery inspect <method> -d node --json`, the node's reply. */
  async function inspect(method: string, args: readonly string[] = []): Promise<unknown> {
    const replies = (await celeryJson(env, ['inspect', method, ...args, '-d', node, '-t', '5'])) as Replies
    assert.ok(node in replies, withLog(`${method}: no reply from ${node}: ${JSON.stringify(replies)}`))
    return replies[node]
  }

  async function send(name: string, args: unknown[], countdown?: number): Promise<string> {
    const out = await pyClient<{ id: string }>(env, ['send', name, JSON.stringify(args), ...(countdown ? [String(countdown)] : [])])
    taskIds.push(out.id)
    return out.id
  }

  async function waitActive(id: string): Promise<Rec> {
    return waitFor(async () => ((await inspect('active')) as Rec[]).find((t) => t.id === id), {
      timeoutMs: 20_000,
      intervalMs: 300,
      what: `task ${id} in inspect active`,
    })
  }

  // Each `python3 -m celery` run costs a second or two, so the idle-state
  // commands run side by side and are then checked one by one.
  const idle: Record<string, unknown> = {}
  it('celery inspect ping|stats|registered|active_queues|conf|revoked --json all list the node', async () => {
    const methods = ['ping', 'stats', 'registered', 'active_queues', 'conf', 'revoked', 'active', 'reserved', 'scheduled']
    const replies = await Promise.all(methods.map((m) => inspect(m)))
    methods.forEach((m, i) => (idle[m] = replies[i]))
    assert.deepEqual(idle.ping, { ok: 'pong' })
    assert.deepEqual(idle.active, [])
    assert.deepEqual(idle.reserved, [])
    assert.deepEqual(idle.scheduled, [])
    assert.deepEqual(idle.revoked, [])
  })

  it('inspect stats: pool, broker without password, prefetch_count, rusage, total', () => {
    const stats = idle.stats as Rec
    const pool = stats.pool as Rec
    assert.equal(pool['max-concurrency'], 2)
    assert.equal((pool.processes as number[]).length, 2)
    const broker = stats.broker as Rec
    assert.equal(broker.transport, 'amqp')
    assert.equal(broker.hostname, '127.0.0.1')
    assert.ok(!JSON.stringify(broker).includes('guest:guest'), 'broker info must not carry the password')
    assert.equal(stats.prefetch_count, 8)
    assert.equal(typeof (stats.rusage as Rec).maxrss, 'number')
    assert.equal(typeof stats.total, 'object')
    assert.equal(typeof stats.pid, 'number')
  })

  it("inspect registered lists the module's tasks", () => {
    const names = idle.registered as string[]
    for (const n of ['proj.add', 'proj.fail', 'proj.sleep', 'proj.spin']) assert.ok(names.includes(n), `${n} in ${JSON.stringify(names)}`)
  })

  it("inspect active_queues: Celery's queue shape", () => {
    const queues = idle.active_queues as Rec[]
    const q = queues.find((x) => x.name === env.queue)
    assert.ok(q, JSON.stringify(queues))
    assert.equal(q.routing_key, env.queue)
    assert.deepEqual((q.exchange as Rec).name, env.queue)
    assert.equal((q.exchange as Rec).type, 'direct')
    assert.equal(q.durable, true)
  })

  it("inspect conf: the worker's settings, no password", () => {
    const conf = idle.conf as Rec
    assert.ok(Object.keys(conf).length > 0, JSON.stringify(conf))
    assert.ok(!JSON.stringify(conf).includes('guest:guest'), 'conf must not carry the password')
    // Every Celery 5.2.6 worker's reply has it (its Settings' own attribute); Celery's test_conf reads it.
    assert.ok('deprecated_settings' in conf && conf.deprecated_settings === null, JSON.stringify(conf))
  })

  it('inspect active/reserved/scheduled while both slots are busy; the main process still answers', async () => {
    const batch = [
      ['proj.sleep', [30], null],
      ['proj.sleep', [30], null],
      ['proj.add', [1, 1], null],
      ['proj.add', [2, 2], 120],
    ]
    const { ids } = await pyClient<{ ids: string[] }>(env, ['send_batch', JSON.stringify(batch)])
    taskIds.push(...ids)
    const [a, b, waiting, later] = ids as [string, string, string, string]
    const active = await waitActive(a)
    await waitActive(b)
    for (const k of ['id', 'name', 'args', 'kwargs', 'type', 'hostname', 'time_start', 'acknowledged', 'delivery_info', 'worker_pid']) {
      assert.ok(k in active, `active item has ${k}: ${JSON.stringify(active)}`)
    }
    assert.equal(active.name, 'proj.sleep')
    assert.equal(active.hostname, node)
    const [reservedList, scheduledList] = (await Promise.all([inspect('reserved'), inspect('scheduled')])) as [Rec[], Rec[]]
    const reserved = reservedList.find((t) => t.id === waiting)
    assert.ok(reserved, withLog(`reserved: ${JSON.stringify(reservedList)}`))
    assert.equal(reserved.name, 'proj.add')
    const scheduled = scheduledList.find((x) => (x.request as Rec).id === later)
    assert.ok(scheduled, withLog(`scheduled: ${JSON.stringify(scheduledList)}`))
    assert.equal(typeof scheduled.eta, 'string')
    assert.ok('priority' in scheduled)

    // Free the slots (the revoke cases below need them): terminate both sleeps.
    const res = await celery(env, ['control', 'terminate', 'SIGTERM', a, b, '-d', node, '-t', '5'])
    assert.equal(res.code, 0, res.stderr)
    const [sa, sb, done] = await Promise.all(
      [a, b, waiting].map((id) => pyClient<{ state: string; result: unknown }>(env, ['get', id, '20'])),
    )
    assert.equal(sa?.state, 'REVOKED', withLog(`${a}: ${JSON.stringify(sa)}`))
    assert.equal(sb?.state, 'REVOKED', withLog(`${b}: ${JSON.stringify(sb)}`))
    assert.equal(done?.result, 2)
  })

  it('celery control terminate SIGKILL <id> kills a busy prefork child: state REVOKED', async () => {
    const id = await send('proj.spin', [60])
    const active = await waitActive(id)
    const res = await celery(env, ['control', 'terminate', 'SIGKILL', id, '-d', node, '-t', '5', '--json'])
    assert.equal(res.code, 0, res.stderr)
    const st = await pyClient<{ state: string; exc_type: string | null }>(env, ['get', id, '20'])
    assert.equal(st.state, 'REVOKED', withLog(JSON.stringify(st)))
    assert.equal(st.exc_type, 'TaskRevokedError')
    const pid = active.worker_pid as number
    await waitFor(
      () => {
        try {
          process.kill(pid, 0)
          return false
        } catch {
          return true
        }
      },
      { timeoutMs: 10_000, what: `child ${pid} gone` },
    )
    assert.ok(((await inspect('revoked')) as string[]).includes(id))
  })

  it('app.control.revoke(id, terminate=True) from Python kills the task: state REVOKED', async () => {
    const id = await send('proj.spin', [60])
    await waitActive(id)
    await pyClient(env, ['revoke', id, 'SIGTERM'])
    const st = await pyClient<{ state: string }>(env, ['get', id, '20'])
    assert.equal(st.state, 'REVOKED', withLog(JSON.stringify(st)))
    assert.ok(((await inspect('revoked')) as string[]).includes(id))
    // The pool replaced its children: both slots serve again.
    const out = await pyClient<{ result: unknown }>(env, ['delay', 'proj.add', '[5, 5]', '20'])
    assert.equal(out.result, 10)
  })

  it('control add_consumer: the worker consumes the new queue', async () => {
    const replies = (await celeryJson(env, ['control', 'add_consumer', extraQueue, '-d', node, '-t', '5'])) as Rec[]
    assert.deepEqual(replies, [{ [node]: { ok: `add consumer ${extraQueue}` } }])
    const queues = (await inspect('active_queues')) as Rec[]
    assert.ok(
      queues.some((q) => q.name === extraQueue),
      JSON.stringify(queues),
    )
    const out = await pyClient<{ result: unknown }>({ ...env, queue: extraQueue }, ['delay', 'proj.mul', '[6, 7]', '20'])
    assert.equal(out.result, 42, withLog(JSON.stringify(out)))
  })

  it('control rate_limit proj.mul 1/m: a second call waits for its token', async () => {
    const replies = (await celeryJson(env, ['control', 'rate_limit', 'proj.mul', '1/m', '-d', node, '-t', '5'])) as Rec[]
    assert.deepEqual(replies, [{ [node]: { ok: 'new rate limit set successfully' } }])
    const first = await send('proj.mul', [2, 3])
    const second = await send('proj.mul', [3, 4])
    assert.equal((await pyClient<{ result: unknown }>(env, ['get', first, '20'])).result, 6)
    // Unlimited, the second would be done within milliseconds of the first.
    const st = await pyClient<{ state: string }>(env, ['get', second, '3'])
    assert.equal(st.state, 'PENDING', withLog(`rate limit ignored: ${JSON.stringify(st)}`))
    // Celery's plain `inspect registered` shows task.rate_limit, which `control rate_limit` set.
    const registered = (await inspect('registered')) as string[]
    assert.ok(registered.includes('proj.mul [rate_limit=1/m]'), JSON.stringify(registered))
    assert.ok(registered.includes('proj.add'), JSON.stringify(registered))
  })

  it('control shutdown stops the worker', async () => {
    // Like Celery's, the worker stops without replying, so the CLI's exit code says nothing here.
    await celery(env, ['control', 'shutdown', '-d', node, '-t', '1'])
    const exit = await Promise.race([worker!.exited, new Promise((r) => setTimeout(() => r('still running'), 20_000))])
    assert.equal(exit, 0, withLog(`exit: ${String(exit)}`))
    // Celery's worker logs the command's msg, 'Got shutdown from remote' by default, and exits 0.
    assert.match(worker!.log, /WARNING\/MainProcess\] Got shutdown from remote$/m, withLog('no shutdown line'))
  })
})
