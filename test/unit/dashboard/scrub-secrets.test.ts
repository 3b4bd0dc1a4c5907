// What the dashboard passes on from workers' replies (their conf, stats) and
// from failures it shows: no password, whether under a key named like one or
// inside a URL.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { scrubSecrets } from '../../../src/dashboard/cluster.js'

test('[secrets] passwords leave replies: keys and URLs', () => {
  const out = scrubSecrets({
    broker: { userid: 'guest', password: 'guest' },
    conf: { broker_url: 'amqp://guest:hunter2@127.0.0.1:5672//', result_backend: ['redis://:pw@127.0.0.1:6379/1'] },
  })
  assert.equal(JSON.stringify(out).includes('hunter2'), false)
  assert.equal(JSON.stringify(out).includes(':pw@'), false)
  assert.equal(JSON.stringify(out).includes('"password"'), false)
})
