// The canvas shapes, errbacks and inspect answers of Celery 5.2.6's own
// integration suite (t/integration), sent by Python Celery to a tsq worker
// running our port of its tasks (test/celery-suite/tasks.js), on RabbitMQ with
// Redis results: so CI guards what that suite found without Celery's code.
import assert from 'node:assert/strict'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { PY_DIR, PYTHON, REPO_ROOT, parseJsonOut, run } from './helpers/python-worker.js'
import { startTsqWorker, type TsqWorker, type WiEnv } from './worker-helpers/tsq-worker.js'

const skip = (await brokerSkipReason('amqp')) || (await brokerSkipReason('redis'))

type Shape = { value?: unknown; exc_type?: string; exc_args?: string[]; echo?: string[]; count?: number }

describe('Celery 5.2.6 suite shapes: Python client, tsq worker', { skip }, () => {
  const redisBase = REDIS_URL.replace(/\/\d*$/, '')
  const env: WiEnv = { broker: AMQP_URL, backend: `${redisBase}/5`, queue: uniqueName('tsq-suite') }
  const echoRedis = `${redisBase}/6`
  let worker: TsqWorker | undefined

  before(async () => {
    process.env.CELERY_SUITE_QUEUE = env.queue
    process.env.CELERY_SUITE_REDIS_URL = echoRedis
    worker = await startTsqWorker({
      env,
      module: resolve(REPO_ROOT, 'test/celery-suite/tasks.js'),
      pool: 'prefork',
      concurrency: 1,
      events: true,
    })
  })

  after(async () => {
    await worker?.stop()
    await deleteCeleryQueues('amqp', env.broker, [env.queue])
  })

  async function shapes(...names: string[]): Promise<Record<string, Shape & Record<string, unknown>>> {
    const res = await run(PYTHON, [resolve(PY_DIR, 'suite_shapes.py'), ...names], {
      cwd: PY_DIR,
      timeoutMs: 120_000,
      env: {
        ...process.env,
        PYTHONDONTWRITEBYTECODE: '1',
        SHAPES_BROKER: env.broker,
        SHAPES_BACKEND: env.backend,
        SHAPES_QUEUE: env.queue,
        SHAPES_REDIS: echoRedis,
        SHAPES_NODE: worker!.nodename,
      },
    })
    if (res.code !== 0) throw new Error(`suite_shapes.py exited ${res.code}\n${res.stderr}\n--- worker ---\n${worker?.logTail()}`)
    return parseJsonOut(res, 'suite_shapes.py') as Record<string, Shape & Record<string, unknown>>
  }

  const withLog = (v: unknown) => `${JSON.stringify(v)}\n--- tsq worker log ---\n${worker?.logTail() ?? ''}`

  it('a chain step that is a chord whose body is a chain goes on to the steps after it', async () => {
    const out = await shapes('chain_of_chord_with_chain_body')
    assert.deepEqual(out.chain_of_chord_with_chain_body, { value: [6, 6] }, withLog(out))
  })

  it("a chord header holding a chain that ends in a group: the group's members count in the chord and the body gets their results nested", async () => {
    const out = await shapes('nested_group_chain', 'nested_chord_group_chain_group_tail', 'chord_header_task_and_chain_group')
    assert.deepEqual(out.nested_group_chain, { value: 11 }, withLog(out))
    assert.deepEqual(out.nested_chord_group_chain_group_tail, { value: [[42, 42]] }, withLog(out))
    // Started by the client, the chain's group has the chord's id; applying it must not reset the chord's size.
    assert.deepEqual(out.chord_header_task_and_chain_group, { value: [101, [1001, 2001]] }, withLog(out))
  })

  it("a replacement chain's own link and link_error run", async () => {
    const out = await shapes('replaced_chain_callback', 'replaced_chain_errback')
    assert.deepEqual(out.replaced_chain_callback, { value: 'Hello world', echo: ['Internal chain callback'] }, withLog(out))
    assert.equal(out.replaced_chain_errback!.exc_type, 'ValueError', withLog(out))
    assert.deepEqual(out.replaced_chain_errback!.echo, ['Internal chain errback'], withLog(out))
  })

  it('a new-style errback (request, exc, traceback) is called in the worker with the failed chord body as its request', async () => {
    const out = await shapes('errback_new_style_simple', 'errback_new_style_header_chain')
    for (const name of ['errback_new_style_simple', 'errback_new_style_header_chain']) {
      assert.equal(out[name]!.exc_type, 'ExpectedException', withLog(out))
      assert.equal(out[name]!.count, 1, withLog(out))
    }
  })

  it("a chain inside a chord that fails before its end fails the chord and calls the chord's errback", async () => {
    const out = await shapes('errback_old_style_header_chain', 'errback_old_style_body_chain')
    for (const name of ['errback_old_style_header_chain', 'errback_old_style_body_chain']) {
      assert.equal(out[name]!.exc_type, 'ExpectedException', withLog(out))
      assert.equal(out[name]!.count, 1, withLog(out))
    }
  })

  it('add_to_chord: a task or a chord added by a header task is waited for by the chord', async () => {
    const out = await shapes('add_to_chord', 'add_chord_to_chord')
    assert.deepEqual(out.add_to_chord, { value: [0, 5, 6, 7] }, withLog(out))
    assert.deepEqual(out.add_chord_to_chord, { value: [0, 18] }, withLog(out))
  })

  it("request.properties holds the message's properties (app_id)", async () => {
    const out = await shapes('properties')
    assert.deepEqual(out.properties, { value: { app_id: '1234' } }, withLog(out))
  })

  it("inspect registered('name') and scheduled answer in Celery's format", async () => {
    const out = await shapes('inspect')
    const got = out.inspect as { registered_add: string[]; scheduled_eta: string | null; expected_eta: string }
    assert.deepEqual(got.registered_add, ['t.integration.tasks.add [name=t.integration.tasks.add]'], withLog(out))
    assert.equal(got.scheduled_eta, got.expected_eta, withLog(out))
  })
})
