// What remote control and task calls from tsq *do* to a Python Celery worker,
// checked through Celery's own view (AsyncResult, celery inspect) or tsq's.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { waitFor } from '../../helpers/brokers.js'
import { RESULT_BACKEND, type InteropContext } from './context.js'
import { parseJsonOut, runPyScript, type RunResult } from './python-worker.js'

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

interface PeerResult {
  state: string
  ready: boolean
  result: unknown
  exc_type: string | null
  exc_message: string | null
}

function must(res: RunResult, what: string): RunResult {
  assert.equal(res.code, 0, `${what} exited ${res.code}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`)
  return res
}

function taskIdFrom(res: RunResult, what: string): string {
  const id = UUID.exec(res.stdout)?.[0]
  assert.ok(id, `${what} printed no task id: ${res.stdout}`)
  return id
}

/** Celery's own AsyncResult, waiting up to `waitS` seconds for a ready state. */
async function peerResult(x: InteropContext, id: string, waitS = 20): Promise<PeerResult> {
  const res = must(await runPyScript('result_state.py', [id, String(waitS)], x.peer, { timeoutMs: (waitS + 20) * 1000 }), 'result_state.py')
  return JSON.parse(res.stdout.trim()) as PeerResult
}

async function tsqCall(x: InteropContext, task: string, argsJson: string): Promise<string> {
  const res = must(
    await x.tsq(['call', task, '--args', argsJson, '--queue', x.peer.queue, '--result-backend', RESULT_BACKEND]),
    `tsq call ${task}`,
  )
  const id = taskIdFrom(res, 'tsq call')
  x.taskIds.push(id)
  return id
}

async function celeryCall(x: InteropContext, task: string, argsJson: string): Promise<string> {
  const res = must(await x.celery(['call', task, '--args', argsJson, '--queue', x.peer.queue]), `celery call ${task}`)
  const id = taskIdFrom(res, 'celery call')
  x.taskIds.push(id)
  return id
}

/** `tsq result <id>`, waiting for the task to finish. */
function tsqResult(x: InteropContext, id: string, json: boolean): Promise<RunResult> {
  return x.tsq(['result', id, '--result-backend', RESULT_BACKEND, '-t', '30', ...(json ? ['--json'] : [])])
}

async function registered(x: InteropContext, items: readonly string[]): Promise<string[]> {
  const doc = (await x.remote('tsq', 'inspect', 'registered', items)) as Record<string, string[]>
  const names = doc[x.node]
  assert.ok(Array.isArray(names), `no registered reply from ${x.node}: ${JSON.stringify(doc)}`)
  return names
}

async function activeQueueNames(x: InteropContext): Promise<string[]> {
  const doc = (await x.remote('tsq', 'inspect', 'active_queues')) as Record<string, { name: string }[]>
  return (doc[x.node] ?? []).map((q) => q.name)
}

export function registerBehaviourCases(ctx: () => InteropContext): void {
  it('[call] proj.add --args [2,3] runs on the Python worker and `tsq result` prints 5', async () => {
    const x = ctx()
    const id = await tsqCall(x, 'proj.add', '[2,3]')
    const peer = await peerResult(x, id)
    assert.equal(peer.state, 'SUCCESS', JSON.stringify(peer))
    assert.equal(peer.result, 5)
    const res = must(await tsqResult(x, id, false), 'tsq result')
    assert.equal(res.stdout.trim(), '5')
  })

  it('[call] proj.fail comes back as ValueError with its message', async () => {
    const x = ctx()
    const id = await tsqCall(x, 'proj.fail', '["boom from tsq"]')
    const peer = await peerResult(x, id)
    assert.equal(peer.state, 'FAILURE')
    assert.equal(peer.exc_type, 'ValueError')
    assert.equal(peer.exc_message, 'boom from tsq')
    const res = await tsqResult(x, id, true)
    // A failed task is a failed command; the document still carries the error.
    const text = JSON.stringify(parseJsonOut(res, 'tsq result --json'))
    assert.match(text, /ValueError/)
    assert.match(text, /boom from tsq/)
  })

  it('[control revoke --terminate] kills a running proj.sleep(30); its result is REVOKED', async () => {
    const x = ctx()
    const id = await celeryCall(x, 'proj.sleep', '[30]')
    await waitFor(
      async () => {
        const doc = (await x.remote('celery', 'inspect', 'query_task', [id])) as Record<string, Record<string, [string, unknown]>>
        return doc[x.node]?.[id]?.[0] === 'active'
      },
      { timeoutMs: 20_000, intervalMs: 200, what: `${id} to be active` },
    )
    const reply = await x.remote('tsq', 'control', 'revoke', [id, '--terminate'])
    assert.deepStrictEqual(reply, [{ [x.node]: { ok: `terminate: ${id}` } }])
    const peer = await peerResult(x, id, 20)
    assert.equal(peer.state, 'REVOKED', JSON.stringify(peer))
    const revoked = (await x.remote('tsq', 'inspect', 'revoked')) as Record<string, string[]>
    assert.ok(revoked[x.node]?.includes(id), `revoked list lacks ${id}: ${JSON.stringify(revoked)}`)
  })

  it('[control rate_limit] proj.add 10/m is set on the worker', async () => {
    const x = ctx()
    const reply = await x.remote('tsq', 'control', 'rate_limit', ['proj.add', '10/m'])
    assert.deepStrictEqual(reply, [{ [x.node]: { ok: 'new rate limit set successfully' } }])
    assert.ok((await registered(x, ['rate_limit'])).includes('proj.add [rate_limit=10/m]'))
  })

  it('[control time_limit] proj.sleep 5 10 is set on the worker', async () => {
    const x = ctx()
    const reply = await x.remote('tsq', 'control', 'time_limit', ['proj.sleep', '5', '10'])
    assert.deepStrictEqual(reply, [{ [x.node]: { ok: 'time limits set successfully' } }])
    // Only the task's attributes can be checked: the 5.2.6 prefork request
    // class captures each task's limits at worker start (worker/request.py,
    // create_request_cls), so new limits never reach the pool there.
    const names = await registered(x, ['time_limit', 'soft_time_limit'])
    assert.ok(names.includes('proj.sleep [time_limit=10.0 soft_time_limit=5.0]'), names.join(', '))
  })

  it('[control add_consumer/cancel_consumer] show in `tsq inspect active_queues`', async () => {
    const x = ctx()
    const q = x.scratchQueue('q1')
    const added = await x.remote('tsq', 'control', 'add_consumer', [q])
    assert.deepStrictEqual(added, [{ [x.node]: { ok: `add consumer ${q}` } }])
    // The worker adds the consumer after replying (spec §3.5), so poll.
    await waitFor(async () => (await activeQueueNames(x)).includes(q), {
      timeoutMs: 10_000,
      intervalMs: 200,
      what: `${q} in active_queues`,
    })
    const cancelled = await x.remote('tsq', 'control', 'cancel_consumer', [q])
    assert.deepStrictEqual(cancelled, [{ [x.node]: { ok: `no longer consuming from ${q}` } }])
    await waitFor(async () => !(await activeQueueNames(x)).includes(q), {
      timeoutMs: 10_000,
      intervalMs: 200,
      what: `${q} gone from active_queues`,
    })
    assert.ok((await activeQueueNames(x)).includes(x.peer.queue))
  })

  it('[inspect ping -d -t 30] with three workers returns once the one node replied', async () => {
    const x = ctx()
    const extra = await Promise.all([x.startExtraWorker(), x.startExtraWorker()])
    const target = extra[1]!.nodename
    // -t is a stall window and -d sets the reply limit to 1 (spec §3.4), so
    // this must not wait 30 s; the 10 s bound on the process says so.
    const res = await x.tsq(['inspect', 'ping', '-d', target, '-t', '30', '--json'], 10_000)
    must(res, 'tsq inspect ping')
    assert.deepStrictEqual(parseJsonOut(res, 'tsq inspect ping'), { [target]: { ok: 'pong' } })
    const all = (await x.remote('tsq', 'inspect', 'ping', [], [x.node, ...extra.map((w) => w.nodename)].join(','))) as Record<
      string,
      unknown
    >
    assert.equal(Object.keys(all).length, 3, JSON.stringify(all))
    await Promise.all(extra.map((w) => w.stop()))
  })

  // Last: it ends the shared worker.
  it('[control shutdown -d node] stops the Python worker', async () => {
    const x = ctx()
    const res = await x.tsq(['control', 'shutdown', '-d', x.node, '-t', '1', '--json'])
    // shutdown never replies (spec §3.3), so, as with celery, no node replied: 69.
    assert.equal(res.code, 69, `stdout: ${res.stdout}\nstderr: ${res.stderr}`)
    const exited = await Promise.race([x.worker.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 30_000))])
    assert.ok(exited, `worker still running after shutdown:\n${x.worker.logTail()}`)
  })
}
