// Failover lists (issue 23): kombu's `url1;url2` and Celery's list form of
// broker_url, masking every password of a list, the failover strategies, and
// the round/back-off rule of kombu's Connection (completes_cycle).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { transportSettingsFromConf } from '../../../src/config/config.js'
import { filterHiddenSettings } from '../../../src/config/hidden-settings.js'
import { isQuorumQueue, queueSettings, usesQuorumQueues, QueueSettingError } from '../../../src/config/queues.js'
import { createTransport } from '../../../src/transport/registry.js'
import { FailoverCycle, maskUrl, parseBrokerUrl, parseFailoverStrategy, splitUrlList, urlListSetting } from '../../../src/transport/url.js'
import { BadBrokerUrlError } from '../../../src/transport/errors.js'

describe('failover URL lists (kombu: hostname.split(";"), or a list)', () => {
  it('splits a ;-list and an array alike, dropping blanks', () => {
    assert.deepEqual(splitUrlList('amqp://a:5672//;amqp://b:5673//'), ['amqp://a:5672//', 'amqp://b:5673//'])
    assert.deepEqual(splitUrlList(['amqp://a//', 'amqp://b//;amqp://c//']), ['amqp://a//', 'amqp://b//', 'amqp://c//'])
    assert.deepEqual(splitUrlList('amqp://a//;'), ['amqp://a//'])
    assert.throws(() => splitUrlList(' ; '), BadBrokerUrlError)
  })

  it('conf.broker_url as a list becomes the one-string form config carries', () => {
    assert.equal(urlListSetting(['amqp://a//', 'amqp://b//']), 'amqp://a//;amqp://b//')
    assert.equal(urlListSetting('amqp://a//'), 'amqp://a//')
    assert.equal(urlListSetting(''), undefined)
    assert.equal(urlListSetting([1, 2]), undefined)
  })

  it('masks every password of a list, keeping its shape', () => {
    assert.equal(maskUrl('amqp://u:p1@a:5672//;amqp://v:p2@b:5673//;amqp://c//'), 'amqp://u:**@a:5672//;amqp://v:**@b:5673//;amqp://c//')
    assert.doesNotMatch(maskUrl('amqp://u:secret@a//;amqp://u:secret@b//'), /secret/)
  })

  it("inspect conf's filter masks broker_url given as a list", () => {
    const shown = filterHiddenSettings({
      broker_url: ['amqp://u:pw@a//', 'amqp://u:pw@b//'],
      other: 'amqp://u:pw@c//;amqp://u:pw@d//',
      result_backend: 'redis://:pw@a/0',
    })
    assert.deepEqual(shown.broker_url, ['amqp://u:********@a//', 'amqp://u:********@b//'])
    assert.doesNotMatch(JSON.stringify(shown.broker_url), /pw/)
  })

  it('parseBrokerUrl of a list reads its first URL (kombu: hostname = alt[0])', () => {
    const p = parseBrokerUrl('amqp://u:p@a:5672/vh;amqp://v:q@b:5673//')
    assert.deepEqual([p.hostname, p.port, p.username, p.path], ['a', 5672, 'u', 'vh'])
  })

  it('broker_failover_strategy: round-robin (default) or shuffle, anything else refused with one line', () => {
    assert.equal(parseFailoverStrategy(undefined), 'round-robin')
    assert.equal(parseFailoverStrategy('shuffle'), 'shuffle')
    assert.throws(() => parseFailoverStrategy('random'), /broker_failover_strategy must be round-robin or shuffle, got "random"/)
    assert.equal(transportSettingsFromConf({ broker_failover_strategy: 'shuffle' }).failoverStrategy, 'shuffle')
    assert.throws(
      () => transportSettingsFromConf({ broker_failover_strategy: 'nope' }),
      (e: Error & { code?: string }) => e.code === 'CONFIG',
    )
  })

  it('round-robin: next URL at once, back off only when a whole round failed (kombu completes_cycle)', () => {
    const c = new FailoverCycle(['a', 'b', 'c'])
    assert.equal(c.current, 'a')
    assert.deepEqual([c.failed(), c.current], [false, 'b'])
    assert.deepEqual([c.failed(), c.current], [false, 'c'])
    assert.deepEqual([c.failed(), c.current], [true, 'a'])
    c.failed()
    c.succeeded()
    // After a success the next loss starts a new round from the node in use.
    assert.equal(c.current, 'b')
    assert.deepEqual([c.failed(), c.failed(), c.failed()], [false, false, true])
  })

  it('one URL: every failure ends a round (back off before each retry, as before lists)', () => {
    const c = new FailoverCycle(['only'])
    assert.deepEqual([c.failed(), c.failed(), c.current], [true, true, 'only'])
  })

  it('shuffle never picks the URL that just failed', () => {
    const draws = [0, 0.99, 0.5, 0.1, 0.7]
    const c = new FailoverCycle(['a', 'b', 'c'], 'shuffle', () => draws.shift() ?? 0)
    let previous = c.current
    for (let i = 0; i < 5; i++) {
      c.failed()
      assert.notEqual(c.current, previous)
      previous = c.current
    }
  })

  it('createTransport: a list is for RabbitMQ; mixed kinds and redis:// lists get one clear line', async () => {
    await assert.rejects(
      createTransport('amqp://a//;redis://b/0'),
      /a failover list must name one kind of broker: amqp:\/\/a\/\/;redis:\/\/b\/0/,
    )
    await assert.rejects(
      createTransport('redis://:pw@a/0;redis://:pw@b/0'),
      (e: Error) => /failover lists are for RabbitMQ/.test(e.message) && !e.message.includes('pw'),
    )
    const t = await createTransport('amqp://u:pw@127.0.0.1:1//;amqps://u:pw@127.0.0.1:2//')
    assert.equal(t.displayUrl, 'amqp://u:**@127.0.0.1:1//;amqps://u:**@127.0.0.1:2//')
    assert.deepEqual(t.alternates, ['amqp://u:**@127.0.0.1:1//', 'amqps://u:**@127.0.0.1:2//'])
    assert.deepEqual(t.connectedNode, { hostname: '127.0.0.1', port: 1, vhost: '/', username: 'u' })
    await t.close()
  })

  it('connect tries each URL once and names them all when none answers', async () => {
    const t = await createTransport('amqp://u:pw@127.0.0.1:1//;amqp://u:pw@127.0.0.1:2//')
    await assert.rejects(t.connect(), (e: Error) => {
      assert.match(e.message, /cannot connect to any broker of amqp:\/\/u:\*\*@127\.0\.0\.1:1\/\/;amqp:\/\/u:\*\*@127\.0\.0\.1:2\/\//)
      assert.match(e.message, /127\.0\.0\.1:2\/\/: /)
      assert.doesNotMatch(e.message, /pw/)
      return true
    })
    await t.close()
  })
})

describe('quorum queues (Celery 5.5: task_default_queue_type, x-queue-type in task_queues)', () => {
  it("task_default_queue_type = 'quorum' makes the default queue a quorum queue", () => {
    const s = queueSettings({ task_default_queue_type: 'quorum' }, 'celery')
    assert.equal(s.defined.get('celery')!.queue.arguments?.['x-queue-type'], 'quorum')
    assert.ok(usesQuorumQueues(s))
    assert.ok(!usesQuorumQueues(queueSettings({}, 'celery')))
  })

  it('x-queue-type in a task_queues entry', () => {
    const s = queueSettings({ task_queues: [{ name: 'q', queue_arguments: { 'x-queue-type': 'quorum' } }, { name: 'c' }] }, 'celery')
    assert.ok(isQuorumQueue(s.defined.get('q')))
    assert.ok(!isQuorumQueue(s.defined.get('c')))
  })

  it('a bad task_default_queue_type is one line', () => {
    assert.throws(
      () => queueSettings({ task_default_queue_type: 'stream' }, 'celery'),
      /task_default_queue_type = "stream": expected 'classic' or 'quorum'/,
    )
  })

  it('priorities on a quorum queue are refused with one clear line', () => {
    assert.throws(
      () => queueSettings({ task_default_queue_type: 'quorum', task_queue_max_priority: 10 }, 'celery'),
      (e: Error) =>
        e instanceof QueueSettingError && /a quorum queue cannot have priorities \(task_queue_max_priority = 10\)/.test(e.message),
    )
    assert.throws(
      () => queueSettings({ task_queues: [{ name: 'q', max_priority: 5, queue_arguments: { 'x-queue-type': 'quorum' } }] }, 'celery'),
      /task_queues\["q"\]: a quorum queue cannot have priorities \(x-max-priority = 5\)/,
    )
    assert.throws(
      () => queueSettings({ task_queues: [{ name: 'q', auto_delete: true, queue_arguments: { 'x-queue-type': 'quorum' } }] }, 'celery'),
      /must be durable and neither exclusive nor auto_delete/,
    )
  })

  it('the delayed-delivery ladder is quorum for an app with quorum queues, or as broker_native_delayed_delivery_queue_type says', () => {
    assert.equal(transportSettingsFromConf({ task_default_queue_type: 'quorum' }).delayedQueueType, 'quorum')
    assert.equal(
      transportSettingsFromConf({ task_queues: { q: { queue_arguments: { 'x-queue-type': 'quorum' } } } }).delayedQueueType,
      'quorum',
    )
    assert.equal(transportSettingsFromConf({}).delayedQueueType, undefined)
    assert.equal(
      transportSettingsFromConf({ task_default_queue_type: 'quorum', broker_native_delayed_delivery_queue_type: 'classic' })
        .delayedQueueType,
      'classic',
    )
  })
})
