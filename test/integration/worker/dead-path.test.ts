// A worker whose path to its broker (or result backend) goes silent: every
// packet dropped, no connection closed, through a TCP proxy the test switches
// to "blackhole" and back. The worker notices within its AMQP heartbeat or
// Redis health check, says each reconnect attempt in one line, reconnects
// once the path heals, and runs every task sent before, during and after
// exactly once. Also: broker_heartbeat 0 is accepted and shown by inspect conf.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../../helpers/brokers.js'
import { BlackholeProxy } from '../../helpers/blackhole-proxy.js'
import { callTask, runTsq, startWorker, taskResult, type SpawnedWorker } from '../../helpers/cli.js'
import { deleteCeleryQueues } from '../../interop/helpers/cleanup.js'

const APP = 'test/fixtures/tasks/cfg-conf-env.js'
const amqpSkip = await brokerSkipReason('amqp')
const redisSkip = await brokerSkipReason('redis')
const amqpQueues: string[] = []
const redisQueues: string[] = []
const proxies: BlackholeProxy[] = []

after(async () => {
  for (const p of proxies) await p.close()
  if (amqpQueues.length) await deleteCeleryQueues('amqp', AMQP_URL, amqpQueues)
  if (redisQueues.length) await deleteCeleryQueues('redis', REDIS_URL, redisQueues)
})

async function proxyTo(url: string): Promise<BlackholeProxy> {
  const u = new URL(url)
  const proxy = await BlackholeProxy.start({ host: u.hostname, port: Number(u.port) })
  proxies.push(proxy)
  return proxy
}

function envFor(broker: string, conf: Record<string, unknown>, backend = ''): NodeJS.ProcessEnv {
  return {
    TSQ_BROKER_URL: broker,
    CELERY_BROKER_URL: '',
    TSQ_RESULT_BACKEND: backend,
    CELERY_RESULT_BACKEND: '',
    CFG_CONF: JSON.stringify(conf),
  }
}

function count(text: string, pattern: RegExp): number {
  return text.match(new RegExp(pattern.source, 'g'))?.length ?? 0
}

/** The "(n)" of each reconnect line, in order. */
function attemptNumbers(output: string): number[] {
  return [...output.matchAll(/consumer: Cannot connect to [^\n]+\nTrying again in \d+\.\d\d seconds\.\.\. \((\d+)\)/g)].map((m) =>
    Number(m[1]),
  )
}

/**
 * The probe: a task before, one sent while the path is dead, one after it
 * healed. The worker must notice (its lost line), try again in numbered
 * lines, say it is connected again, and run each task once.
 */
async function blackholeAndHeal(o: {
  worker: SpawnedWorker
  proxy: BlackholeProxy
  direct: NodeJS.ProcessEnv
  queue: string
  lostReason: RegExp
  noticeWithinMs: number
}): Promise<void> {
  const { worker, proxy, direct, queue } = o
  const before = await callTask(direct, 'cfgenv.noop', [], ['-Q', queue])
  await waitFor(() => worker.output().includes(`Task cfgenv.noop[${before}] succeeded`), {
    timeoutMs: 20_000,
    what: 'the task sent before',
  })
  const acceptedBefore = proxy.accepted
  proxy.blackhole()
  const during = await callTask(direct, 'cfgenv.noop', [], ['-Q', queue])
  await waitFor(() => worker.output().includes('Connection to broker lost'), {
    timeoutMs: o.noticeWithinMs,
    intervalMs: 200,
    what: 'the dead path noticed',
  })
  assert.match(worker.output(), o.lostReason)
  // At least two attempts fail while the path is dead, each said once.
  await waitFor(() => attemptNumbers(worker.output()).length >= 2, { timeoutMs: 60_000, intervalMs: 200, what: 'two reconnect lines' })
  const connectedBefore = count(worker.output(), /Connected to /)
  proxy.heal()
  await waitFor(() => count(worker.output(), /Connected to /) > connectedBefore, {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: 'connected again after heal',
  })
  const numbers = attemptNumbers(worker.output())
  assert.deepEqual(
    numbers,
    numbers.map((_, i) => i + 1),
    `attempts numbered 1..n:\n${worker.output()}`,
  )
  // One line per failed attempt: never more lines than connections tried.
  assert.ok(numbers.length <= proxy.accepted - acceptedBefore, `${numbers.length} lines for ${proxy.accepted - acceptedBefore} attempts`)
  const afterHeal = await callTask(direct, 'cfgenv.noop', [], ['-Q', queue])
  for (const id of [before, during, afterHeal]) {
    await waitFor(() => worker.output().includes(`Task cfgenv.noop[${id}] succeeded`), {
      timeoutMs: 60_000,
      intervalMs: 200,
      what: `task ${id} run`,
    })
  }
  // Settle a moment for a duplicate to show, then count.
  await new Promise((r) => setTimeout(r, 1500))
  for (const id of [before, during, afterHeal]) {
    assert.equal(
      count(worker.output(), new RegExp(`Task cfgenv\\.noop\\[${id}\\] succeeded`)),
      1,
      `task ${id} ran once:\n${worker.output()}`,
    )
  }
}

describe('a blackholed path to RabbitMQ', { skip: amqpSkip }, () => {
  it('[broker_heartbeat 4] noticed by the heartbeat check, one line per attempt, reconnected after heal, each task run once', async () => {
    const queue = uniqueName('tsq-deadpath-amqp')
    amqpQueues.push(queue)
    const proxy = await proxyTo(AMQP_URL)
    const conf = { broker_heartbeat: 4 }
    const worker = await startWorker(
      ['-A', APP, '-Q', queue, '-P', 'solo', '-l', 'INFO', '--without-heartbeat', '--without-mingle', '--without-gossip'],
      {
        env: envFor(proxy.urlFor(AMQP_URL), conf),
        nodename: `${uniqueName('deadpath')}@testhost`,
      },
    )
    try {
      // Two heartbeats and a check period (4 / 3 s) after the last byte, with room for a loaded machine.
      await blackholeAndHeal({
        worker,
        proxy,
        direct: envFor(AMQP_URL, conf),
        queue,
        lostReason: /Too many heartbeats missed/,
        noticeWithinMs: 30_000,
      })
    } finally {
      await worker.stop()
    }
  })

  it('[broker_heartbeat 0] is accepted: the worker starts, inspect conf shows it, and RabbitMQ sees no heartbeat', async () => {
    const queue = uniqueName('tsq-deadpath-hb0')
    amqpQueues.push(queue)
    const env = envFor(AMQP_URL, { broker_heartbeat: 0 })
    const node = `${uniqueName('hb0')}@testhost`
    const worker = await startWorker(
      ['-A', APP, '-Q', queue, '-P', 'solo', '-l', 'INFO', '--without-heartbeat', '--without-mingle', '--without-gossip'],
      { env, nodename: node },
    )
    try {
      const r = await runTsq(['inspect', 'conf', '-d', node, '--json'], { env })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(JSON.parse(r.stdout)[node].broker_heartbeat, 0)
      const id = await callTask(env, 'cfgenv.noop', [], ['-Q', queue])
      await waitFor(() => worker.output().includes(`Task cfgenv.noop[${id}] succeeded`), { timeoutMs: 20_000, what: 'a task run' })
      // The heartbeat RabbitMQ settled on for the worker's connection (rabbitmqctl's `timeout`): none.
      const lines = execFileSync('rabbitmqctl', ['list_connections', '-q', '--no-table-headers', 'timeout', 'client_properties'], {
        encoding: 'utf8',
      })
        .split('\n')
        .filter((l) => l.includes(`"tsq-${worker.child.pid}-`))
      assert.ok(lines.length > 0, "found the worker's connection")
      for (const line of lines) assert.equal(line.split('\t')[0], '0', line)
    } finally {
      await worker.stop()
    }
    assert.doesNotMatch(worker.output().split('Warm shutdown')[1] ?? '', /Result backend: connection/, 'no loss said at shutdown')
  })
})

describe('a blackholed path to Redis', { skip: redisSkip }, () => {
  it('[health_check_interval 2, socket_timeout 3] noticed, one line per attempt, reconnected after heal, each task run once', async () => {
    const queue = uniqueName('tsq-deadpath-redis')
    redisQueues.push(queue)
    const proxy = await proxyTo(REDIS_URL)
    const conf = { broker_transport_options: { health_check_interval: 2, socket_timeout: 3 } }
    const worker = await startWorker(
      ['-A', APP, '-Q', queue, '-P', 'solo', '-l', 'INFO', '--without-heartbeat', '--without-mingle', '--without-gossip'],
      {
        env: envFor(proxy.urlFor(REDIS_URL), conf),
        nodename: `${uniqueName('deadpath')}@testhost`,
      },
    )
    try {
      await blackholeAndHeal({
        worker,
        proxy,
        direct: envFor(REDIS_URL, conf),
        queue,
        lostReason: /Socket timeout|health-check PING/,
        noticeWithinMs: 30_000,
      })
    } finally {
      await worker.stop()
    }
    assert.doesNotMatch(worker.output().split('Warm shutdown')[1] ?? '', /Result backend: connection/, 'no loss said at shutdown')
  })
})

describe('a blackholed path to the Redis result backend', { skip: amqpSkip || redisSkip }, () => {
  let proxy: BlackholeProxy
  before(async () => {
    proxy = await proxyTo(REDIS_URL)
  })

  it('[redis_backend_health_check_interval 2, redis_socket_timeout 3] the result of a task run while it is dead is stored after heal', async () => {
    const queue = uniqueName('tsq-deadpath-backend')
    amqpQueues.push(queue)
    const conf = { redis_backend_health_check_interval: 2, redis_socket_timeout: 3 }
    const viaProxy = proxy.urlFor(REDIS_URL)
    const worker = await startWorker(
      ['-A', APP, '-Q', queue, '-P', 'solo', '-l', 'INFO', '--without-heartbeat', '--without-mingle', '--without-gossip'],
      {
        env: envFor(AMQP_URL, conf, viaProxy),
        nodename: `${uniqueName('deadpath-be')}@testhost`,
      },
    )
    const direct = envFor(AMQP_URL, conf, REDIS_URL)
    try {
      const first = await callTask(direct, 'cfgenv.noop', [], ['-Q', queue])
      assert.equal((await taskResult(direct, first)).status, 'SUCCESS')
      proxy.blackhole()
      const during = await callTask(direct, 'cfgenv.noop', [], ['-Q', queue])
      await waitFor(() => worker.output().includes(`Task cfgenv.noop[${during}] succeeded`), {
        timeoutMs: 60_000,
        intervalMs: 200,
        what: 'the task run while the backend is dead',
      })
      // The dead connection is noticed and given up: the backend tries new ones (three, past ioredis's retries of one command).
      const acceptedBefore = proxy.accepted
      await waitFor(() => proxy.accepted >= acceptedBefore + 3, {
        timeoutMs: 60_000,
        intervalMs: 200,
        what: 'three reconnect attempts of the backend',
      })
      assert.equal(
        count(worker.output(), /Result backend: connection to redis:\/\/[^\n]+ lost: [^\n]+\. Trying to re-establish the connection\.\.\./),
        1,
        worker.output(),
      )
      proxy.heal()
      // The store waiting on the dead connection is sent again once the path is back: the result is not lost.
      const stored = await taskResult(direct, during)
      assert.equal(stored.status, 'SUCCESS', worker.output())
      await waitFor(() => worker.output().includes('Result backend: connected to redis://'), {
        timeoutMs: 30_000,
        what: 'the backend said connected again',
      })
    } finally {
      await worker.stop()
    }
    assert.doesNotMatch(worker.output().split('Warm shutdown')[1] ?? '', /Result backend: connection/, 'no loss said at shutdown')
  })
})
