// The rule a task's `concurrency` option or the `task_concurrency` setting
// gives: the key of a message's arguments (a function, an argument's name, a
// position), the limit and lease, what is refused, and where the store lives;
// and the gauges /metrics shows of the store's keys.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DashboardMetrics } from '../../../src/dashboard/metrics.js'
import { ConcurrencyOptionError, concurrencyRule, concurrencyUrlFor } from '../../../src/locks/index.js'

const fetch = (_url: string, tenant: string): string => tenant

describe('concurrency rules', () => {
  it('a key function of (args, kwargs), the scope the task, a lease of 30 s by default', () => {
    const rule = concurrencyRule('proj.sync', null, { key: (args) => args[0].tenant, limit: 2 }, undefined)!
    assert.equal(rule.keyOf([{ tenant: 'acme' }], {}), 'acme')
    assert.deepEqual([rule.scope, rule.limit, rule.leaseMs], ['proj.sync', 2, 30_000])
  })

  it('a key that is null or undefined is not limited; a non-string key is its text', () => {
    const rule = concurrencyRule('t', null, { key: (args) => args[0], limit: 1 }, undefined)!
    assert.equal(rule.keyOf([undefined], {}), null)
    assert.equal(rule.keyOf([null], {}), null)
    assert.equal(rule.keyOf([7], {}), '7')
    assert.equal(rule.keyOf([{ a: 1 }], {}), '{"a":1}')
  })

  it("an argument's name: a kwarg first, else the positional of that parameter", () => {
    const rule = concurrencyRule('proj.fetch', fetch, { key: 'tenant', limit: 3 }, undefined)!
    assert.equal(rule.keyOf(['u', 'acme'], {}), 'acme')
    assert.equal(rule.keyOf([], { tenant: 'globex' }), 'globex')
  })

  it('task_concurrency, for a task defined in Python: key_arg (a kwarg name or a position), limit, lease, scope', () => {
    const setting = { 'proj.fetch': { key_arg: 'tenant', limit: 2, lease: 5 }, 'proj.pos': { key_arg: 1, limit: 1, scope: 'shared' } }
    const named = concurrencyRule('proj.fetch', null, undefined, setting)!
    assert.equal(named.keyOf([], { tenant: 'acme' }), 'acme')
    assert.equal(named.leaseMs, 5000)
    const pos = concurrencyRule('proj.pos', null, undefined, setting)!
    assert.equal(pos.keyOf(['x', 'acme'], {}), 'acme')
    assert.equal(pos.scope, 'shared')
    assert.equal(concurrencyRule('proj.other', null, undefined, setting), null)
  })

  it("the task's own option wins over the setting", () => {
    const rule = concurrencyRule('proj.fetch', null, { key: 'a', limit: 4 }, { 'proj.fetch': { key_arg: 'b', limit: 1 } })!
    assert.equal(rule.limit, 4)
  })

  it('refuses a limit below 1, a lease of 0, a key that is neither, a setting of another shape', () => {
    assert.throws(() => concurrencyRule('t', null, { key: 'a', limit: 0 }, undefined), ConcurrencyOptionError)
    assert.throws(() => concurrencyRule('t', null, { key: 'a', limit: 1.5 }, undefined), /limit/)
    assert.throws(() => concurrencyRule('t', null, { key: 'a', limit: 1, lease: 0 }, undefined), /lease/)
    assert.throws(() => concurrencyRule('t', null, { key: 3 as unknown as string, limit: 1 }, undefined), /key/)
    assert.throws(() => concurrencyRule('t', null, undefined, ['t']), /task_concurrency/)
    assert.throws(() => concurrencyRule('t', null, undefined, { t: { limit: 1 } }), /key_arg/)
    assert.equal(new ConcurrencyOptionError('x').code, 'CONFIG')
  })

  it('lives in Redis: lock_url, else the broker, else the result backend; none refused', () => {
    const redis = 'redis://127.0.0.1:6379/0'
    assert.equal(concurrencyUrlFor({ lockUrl: 'redis://h/1', brokerUrl: redis }), 'redis://h/1')
    assert.equal(concurrencyUrlFor({ brokerUrl: 'amqp://h//', resultBackend: redis }), redis)
    assert.equal(concurrencyUrlFor({ lockUrl: 'file:///tmp/x', brokerUrl: redis }), redis)
    assert.throws(() => concurrencyUrlFor({ brokerUrl: 'amqp://h//' }), /lock_url/)
  })
})

describe('concurrency gauges', () => {
  it('each key: backlog and running; each scope: its limit; a key gone idle drops out', async () => {
    const m = new DashboardMetrics()
    m.setConcurrency([{ scope: 'proj.sync', limit: 2, keys: [{ key: 'acme', backlog: 9, running: 2 }] }])
    let text = await m.text()
    assert.match(text, /tsq_concurrency_backlog\{scope="proj.sync",key="acme"\} 9/)
    assert.match(text, /tsq_concurrency_running\{scope="proj.sync",key="acme"\} 2/)
    assert.match(text, /tsq_concurrency_limit\{scope="proj.sync"\} 2/)
    m.setConcurrency(null)
    assert.match(await m.text(), /key="acme"\} 9/, 'a store that did not answer leaves the last reading')
    m.setConcurrency([{ scope: 'proj.sync', limit: 2, keys: [] }])
    text = await m.text()
    assert.doesNotMatch(text, /key="acme"/)
  })
})
