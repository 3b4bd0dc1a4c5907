// Celery's task_routes (MapRoute): exact names first, then glob keys in order
// (Python's fnmatch: `*` crosses dots), a queue name or a destination object;
// a list of maps is tried in order. The app's routeFor falls back to its
// default queue; chain() hands back the last step's result; the publish
// signals wrap every send.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp, signature } from '../../../src/app/index.js'
import { fnmatch, routeTask } from '../../../src/config/routes.js'

it('[routes] exact names beat patterns; patterns go in order; values are queue names or { queue, exchange, routing_key }', () => {
  const routes = {
    'proj.images.*': { queue: 'images' },
    'proj.*': 'general',
    'proj.images.resize': { queue: 'gpu', exchange: 'media', routing_key: 'gpu.resize' },
  }
  assert.deepEqual(routeTask('proj.images.resize', routes), { queue: 'gpu', exchange: 'media', routingKey: 'gpu.resize' })
  assert.deepEqual(routeTask('proj.images.crop', routes), { queue: 'images' })
  assert.deepEqual(routeTask('proj.add', routes), { queue: 'general' })
  assert.equal(routeTask('other.add', routes), undefined)
  // A list: the first map with a match wins.
  assert.deepEqual(routeTask('proj.add', [{ 'x.*': 'x' }, { 'proj.add': 'math' }, { 'proj.*': 'late' }]), { queue: 'math' })
  // What is not a route is skipped, not thrown on.
  assert.equal(routeTask('proj.add', { 'proj.add': { exchange: 'no-queue' } }), undefined)
  assert.equal(routeTask('proj.add', null), undefined)
  assert.equal(routeTask('proj.add', 'celery'), undefined)
})

it("[routes] fnmatch is Python's: * and ? cross dots, [seq] and [!seq], regex characters are literal", () => {
  assert.ok(fnmatch('proj.a.b.c', 'proj.*'))
  assert.ok(fnmatch('proj.add', 'proj.ad?'))
  assert.ok(!fnmatch('projXadd', 'proj.add'), 'a dot is a dot')
  assert.ok(fnmatch('proj.v1', 'proj.v[0-9]'))
  assert.ok(!fnmatch('proj.v1', 'proj.v[!0-9]'))
  assert.ok(fnmatch('a+b(c)', 'a+b(c)'))
  assert.ok(fnmatch('a[b', 'a[b'), 'an unclosed [ is literal')
})

it("[routes] the app routes by conf.task_routes, else its default queue; chain() returns the last step's result", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-routes-'))
  const app = createApp({
    name: 'proj',
    defaultQueue: 'jobs',
    broker: `file://${dir}`,
    resultBackend: 'disabled://',
    conf: { task_routes: { 'proj.mul': 'math' } },
  })
  try {
    assert.deepEqual(app.routeFor('proj.mul'), { queue: 'math' })
    assert.deepEqual(app.routeFor('proj.add'), { queue: 'jobs' })
    const transport = await app.transport()
    const sent: Array<{ routingKey: string; id: unknown; chain: Array<{ task: string; options: { task_id?: string } }> }> = []
    const publish = transport.publish.bind(transport)
    transport.publish = (async (
      exchange: string,
      routingKey: string,
      message: { headers?: Record<string, unknown>; body: string | Buffer },
      ...rest: unknown[]
    ) => {
      const [, , embed] = JSON.parse(message.body.toString()) as [
        unknown,
        unknown,
        { chain?: Array<{ task: string; options: { task_id?: string } }> },
      ]
      sent.push({ routingKey, id: message.headers?.id, chain: embed.chain ?? [] })
      return (publish as (...a: unknown[]) => Promise<void>)(exchange, routingKey, message, ...rest)
    }) as typeof transport.publish
    await app.sendTask('proj.mul', [2, 2])
    const result = await app.chain(signature('proj.add', [1, 2]), signature('proj.mul', [10]))
    assert.deepEqual(
      sent.map((s) => s.routingKey),
      ['math', 'jobs'],
    )
    assert.deepEqual(
      sent[1]!.chain.map((s) => s.task),
      ['proj.mul'],
    )
    assert.equal(result.id, sent[1]!.chain[0]!.options.task_id, "the mul step's frozen id")
    assert.notEqual(result.id, sent[1]!.id)
  } finally {
    await app.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

it('[signals] before_task_publish may add headers, which go out with the message; after_task_publish follows with the routing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-publish-'))
  const app = createApp({
    name: 'proj',
    broker: `file://${dir}`,
    resultBackend: 'disabled://',
    conf: { task_routes: { 'proj.mul': 'math' } },
  })
  try {
    const seen: string[] = []
    app.on('before_task_publish', ({ sender, headers, body }) => {
      headers.traceparent = '00-trace-span-01'
      seen.push(`before ${sender} ${JSON.stringify(body[0])}`)
    })
    app.on(
      'after_task_publish',
      ({ sender, routingKey, headers }) => void seen.push(`after ${sender} ${routingKey} ${String(headers.traceparent)}`),
    )
    const transport = await app.transport()
    const published: Array<Record<string, unknown>> = []
    const publish = transport.publish.bind(transport)
    transport.publish = (async (
      exchange: string,
      routingKey: string,
      message: { properties: { headers?: Record<string, unknown> } },
      ...rest: unknown[]
    ) => {
      published.push({ ...message.properties.headers })
      return (publish as (...a: unknown[]) => Promise<void>)(exchange, routingKey, message, ...rest)
    }) as typeof transport.publish
    await app.sendTask('proj.mul', [6, 7])
    assert.deepEqual(seen, ['before proj.mul [6,7]', 'after proj.mul math 00-trace-span-01'])
    assert.equal(published[0]!.traceparent, '00-trace-span-01')
  } finally {
    await app.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
