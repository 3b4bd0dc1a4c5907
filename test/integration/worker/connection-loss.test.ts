// tsq-test: exclusive (the prefetch test needs a task still running when rabbitmqctl acts, which a loaded machine misses)
// A spawned `tsq worker` losing its broker connection for real (RabbitMQ:
// rabbitmqctl close_connection on the worker's own connections; Redis: CLIENT
// KILL by the worker's client names): it says so, reconnects, consumes its
// queues again (add_consumer ones too), cancels late-ack tasks when asked, and
// reduces its prefetch while old tasks still run.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../../helpers/brokers.js'
import { callTask, runTsq, type SpawnedWorker, startWorker } from '../../helpers/cli.js'
import { deleteCeleryQueues } from '../../interop/helpers/cleanup.js'

const APP = 'test/fixtures/tasks/worker-extra-tasks.js'
const amqpSkip = await brokerSkipReason('amqp')
const redisSkip = await brokerSkipReason('redis')
const amqpQueues: string[] = []
const redisQueues: string[] = []

after(async () => {
  // Queues, their same-named exchanges and Redis bindings: nothing of the test outlives it.
  if (amqpQueues.length) await deleteCeleryQueues('amqp', AMQP_URL, amqpQueues)
  if (redisQueues.length) await deleteCeleryQueues('redis', REDIS_URL, redisQueues)
})

function envFor(broker: string): NodeJS.ProcessEnv {
  return { TSQ_BROKER_URL: broker, CELERY_BROKER_URL: '', TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '' }
}

/** Closes every RabbitMQ connection named `tsq-<pid>-…` (only the worker's own). */
export function closeAmqpConnectionsOf(pid: number): number {
  const out = execFileSync('rabbitmqctl', ['list_connections', '-q', '--no-table-headers', 'pid', 'client_properties'], {
    encoding: 'utf8',
  })
  let closed = 0
  // The consumer's connection first, then the worker's publishing one (`-publish`): the loss is noticed after one close, as before there were two.
  const lines = out.split('\n').sort((a, b) => Number(a.includes('-publish"')) - Number(b.includes('-publish"')))
  for (const line of lines) {
    const [connPid] = line.split('\t')
    if (!connPid || !line.includes(`"tsq-${pid}-`)) continue
    try {
      execFileSync('rabbitmqctl', ['close_connection', connPid, 'tsq test: simulated broker loss'], { stdio: 'ignore' })
      closed += 1
    } catch {
      // Closed meanwhile.
    }
  }
  return closed
}

/** CLIENT KILL of every Redis connection named `tsq-<pid>-…`. */
export async function killRedisClientsOf(pid: number): Promise<number> {
  const { Redis } = await import('ioredis')
  const r = new Redis(REDIS_URL)
  try {
    const list = (await r.client('LIST')) as string
    let killed = 0
    for (const line of list.split('\n')) {
      const id = /\bid=(\d+)/.exec(line)?.[1]
      const name = /\bname=(\S*)/.exec(line)?.[1] ?? ''
      if (id && name.startsWith(`tsq-${pid}-`)) killed += Number(await r.client('KILL', 'ID', id))
    }
    return killed
  } finally {
    await r.quit()
  }
}

function count(text: string, pattern: RegExp): number {
  return text.match(new RegExp(pattern.source, 'g'))?.length ?? 0
}

async function waitActive(env: NodeJS.ProcessEnv, node: string, id: string): Promise<void> {
  await waitFor(
    async () => {
      const r = await runTsq(['inspect', 'active', '-d', node, '--json'], { env })
      return r.code === 0 && JSON.stringify(JSON.parse(r.stdout)[node] ?? []).includes(id)
    },
    { timeoutMs: 20_000, intervalMs: 200, what: `task ${id} active on ${node}` },
  )
}

async function start(
  broker: string,
  queue: string,
  extra: string[] = [],
): Promise<{ worker: SpawnedWorker; env: NodeJS.ProcessEnv; node: string }> {
  const env = envFor(broker)
  const node = `${uniqueName('loss')}@testhost`
  const worker = await startWorker(['-A', APP, '-Q', queue, '-l', 'INFO', '--without-heartbeat', '--without-mingle', ...extra], {
    env,
    nodename: node,
  })
  return { worker, env, node }
}

async function dropAndWait(worker: SpawnedWorker, kind: 'amqp' | 'redis'): Promise<void> {
  const restoredBefore = count(worker.output(), /Connected to /)
  const dropped = kind === 'amqp' ? closeAmqpConnectionsOf(worker.child.pid!) : await killRedisClientsOf(worker.child.pid!)
  assert.ok(dropped > 0, `found the worker's ${kind} connections to drop`)
  await waitFor(() => worker.output().includes('Connection to broker lost'), { timeoutMs: 20_000, what: 'connection lost log line' })
  await waitFor(() => count(worker.output(), /Connected to /) > restoredBefore, { timeoutMs: 30_000, what: 'connection restored log line' })
}

describe('broker connection loss on RabbitMQ', { skip: amqpSkip }, () => {
  it('[connection:lost/restored] logged; queues added with add_consumer are consumed again', async () => {
    const q1 = uniqueName('tsq-loss-q1')
    const q2 = uniqueName('tsq-loss-q2')
    amqpQueues.push(q1, q2)
    const { worker, env, node } = await start(AMQP_URL, q1, ['-P', 'solo', '-c', '2'])
    try {
      const r = await runTsq(['control', 'add_consumer', q2, '-d', node, '--json'], { env })
      assert.deepEqual(JSON.parse(r.stdout), [{ [node]: { ok: `add consumer ${q2}` } }])
      await dropAndWait(worker, 'amqp')
      const id1 = await callTask(env, 'extra.pid', [], ['-Q', q1])
      const id2 = await callTask(env, 'extra.pid', [], ['-Q', q2])
      for (const id of [id1, id2])
        await waitFor(() => worker.output().includes(`Task extra.pid[${id}] succeeded`), {
          timeoutMs: 20_000,
          what: `task ${id} run after reconnect`,
        })
    } finally {
      await worker.stop()
    }
  })

  it('[--cancel-long-running-tasks-on-connection-loss] a running late-ack task is terminated, redelivered and run again', async () => {
    const q = uniqueName('tsq-loss-cancel')
    amqpQueues.push(q)
    const { worker, env, node } = await start(AMQP_URL, q, ['-c', '1', '--cancel-long-running-tasks-on-connection-loss'])
    try {
      const id = await callTask(env, 'extra.sleep', [8], ['-Q', q])
      await waitActive(env, node, id)
      await dropAndWait(worker, 'amqp')
      await waitFor(
        () =>
          worker
            .output()
            .includes(
              `Task extra.sleep[${id}] cannot be acknowledged after a connection loss since late acknowledgement is enabled for it.`,
            ),
        { what: 'cancel warning' },
      )
      await waitFor(() => worker.output().includes(`Task extra.sleep[${id}] succeeded`), {
        timeoutMs: 30_000,
        what: 'redelivered task finished',
      })
      assert.equal(count(worker.output(), new RegExp(`Task extra\\.sleep\\[${id}\\] received`)), 2, worker.output())
      assert.equal(count(worker.output(), new RegExp(`Task extra\\.sleep\\[${id}\\] succeeded`)), 1)
    } finally {
      await worker.stop()
    }
  })

  it('[worker_enable_prefetch_count_reduction] after a reconnect the prefetch shrinks by the running tasks, then is restored', async () => {
    const q = uniqueName('tsq-loss-prefetch')
    amqpQueues.push(q)
    const { worker, env, node } = await start(AMQP_URL, q, ['-c', '2', '--prefetch-multiplier', '2'])
    try {
      const id = await callTask(env, 'extra.sleep', [8], ['-Q', q])
      await waitActive(env, node, id)
      await dropAndWait(worker, 'amqp')
      await waitFor(
        () =>
          /Temporarily reducing the prefetch count to [1-3] to avoid over-fetching since [12] tasks are currently being processed/.test(
            worker.output(),
          ),
        { what: 'prefetch reduction' },
      )
      await waitFor(() => worker.output().includes('The prefetch count has been restored to the maximum of 4'), {
        timeoutMs: 30_000,
        what: 'prefetch restored',
      })
    } finally {
      await worker.stop()
    }
  })
})

describe('broker connection loss on Redis', { skip: redisSkip }, () => {
  it('[connection:lost/restored] CLIENT KILL is logged and survived; tasks sent afterwards run', async () => {
    const q = uniqueName('tsq-loss-redis')
    redisQueues.push(q)
    const { worker, env } = await start(REDIS_URL, q, ['-P', 'solo', '-c', '2'])
    try {
      await dropAndWait(worker, 'redis')
      const id = await callTask(env, 'extra.pid', [], ['-Q', q])
      await waitFor(() => worker.output().includes(`Task extra.pid[${id}] succeeded`), {
        timeoutMs: 20_000,
        what: 'task run after reconnect',
      })
    } finally {
      await worker.stop()
    }
  })
})
