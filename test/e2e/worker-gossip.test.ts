// Gossip, on RabbitMQ and on Redis: a worker follows its peers' heartbeats and
// logs Celery's "missed heartbeat from <node>" when one dies without going
// offline (kill -9); a worker started with --without-gossip does not follow
// them. Heartbeats every second, so a dead peer is missed after 2 s and
// reported at the next 5-second check.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { AMQP_URL, brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

const APP = 'test/fixtures/tasks/noop-tasks.js'
const running: SpawnedWorker[] = []
after(async () => {
  for (const w of running.splice(0)) await w.stop('SIGKILL')
})

for (const [kind, url] of [
  ['amqp', AMQP_URL],
  ['redis', REDIS_URL],
] as const) {
  const skip = await brokerSkipReason(kind)
  describe(`[gossip] ${kind}`, { skip }, () => {
    it(
      'a peer killed with -9 is reported as a missed heartbeat by a gossiping worker, not by one --without-gossip',
      { timeout: 60_000 },
      async () => {
        const queue = uniqueName(`tsq-gossip-${kind}`)
        const mine: SpawnedWorker[] = []
        const start = async (name: string, extra: string[] = []) => {
          const w = await startWorker(
            [
              '-A',
              APP,
              '-b',
              url,
              '-Q',
              queue,
              '-P',
              'solo',
              '-c',
              '1',
              '-l',
              'DEBUG',
              '--heartbeat-interval',
              '1',
              '--without-mingle',
              ...extra,
            ],
            { nodename: `${name}-${queue}@testhost` },
          )
          running.push(w)
          mine.push(w)
          return w
        }
        try {
          const follower = await start('g1')
          const deaf = await start('g2', ['--without-gossip'])
          const doomed = await start('g3')
          await waitFor(() => follower.output().includes(`${doomed.nodename} joined the party`), {
            timeoutMs: 10_000,
            what: 'the follower to see the third worker',
          })
          // Gossip hears the workers that were there before it, by their next heartbeat.
          await waitFor(() => doomed.output().includes(`${follower.nodename} joined the party`), {
            timeoutMs: 5_000,
            what: 'the third worker to see the first',
          })
          await doomed.stop('SIGKILL')
          const missed = `missed heartbeat from ${doomed.nodename}`
          await waitFor(() => follower.output().includes(missed), { timeoutMs: 15_000, what: 'the missed heartbeat to be logged' })
          // One more 5-second check: a gossiping worker would have logged by now too.
          await new Promise((resolve) => setTimeout(resolve, 6_000))
          assert.ok(!deaf.output().includes('missed heartbeat'), deaf.output())
          assert.ok(!deaf.output().includes('joined the party'), deaf.output())
          assert.equal(follower.output().split(missed).length - 1, 1, 'reported once')
          assert.equal(await follower.stop('SIGTERM'), 0, follower.output())
          assert.equal(await deaf.stop('SIGTERM'), 0, deaf.output())
        } finally {
          // Stopped first: a live worker declares a deleted queue again.
          for (const w of mine) await w.stop('SIGKILL')
          await deleteCeleryQueues(kind, url, [queue])
        }
      },
    )
  })
}
