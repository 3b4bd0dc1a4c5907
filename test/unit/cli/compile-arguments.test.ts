// celery/bin/control.py::_compile_arguments, typed from Panel.meta of 5.2.6.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compileArguments, CONTROL_COMMANDS, PyFloat, visibleCommands } from '../../../src/protocol/index.js'

describe('spec §3.5: CLI positional arguments are typed as Celery types them', () => {
  it('typed arguments', () => {
    assert.deepEqual(compileArguments('rate_limit', ['proj.add', '10/m']), { task_name: 'proj.add', rate_limit: '10/m' })
    assert.deepEqual(compileArguments('time_limit', ['proj.add', '5', '10.5']), {
      task_name: 'proj.add',
      soft: new PyFloat(5),
      hard: new PyFloat(10.5),
    })
    assert.deepEqual(compileArguments('pool_grow', ['3']), { n: 3 })
    assert.deepEqual(compileArguments('autoscale', ['10', '2']), { max: 10, min: 2 })
    assert.deepEqual(compileArguments('conf', ['yes']), { with_defaults: true })
    assert.deepEqual(compileArguments('add_consumer', ['q1']), { queue: 'q1' })
  })
  it('variadic arguments collect the rest', () => {
    assert.deepEqual(compileArguments('revoke', ['a', 'b']), { task_id: ['a', 'b'] })
    assert.deepEqual(compileArguments('terminate', ['SIGKILL', 'a', 'b']), { signal: 'SIGKILL', task_id: ['a', 'b'] })
    assert.deepEqual(compileArguments('query_task', []), { ids: [] })
    assert.deepEqual(compileArguments('registered', ['rate_limit']), { taskinfoitems: ['rate_limit'] })
  })
  it('too many arguments and bad types are errors', () => {
    assert.throws(() => compileArguments('ping', ['x']), /takes arguments/)
    assert.throws(() => compileArguments('pool_grow', ['many']), /integer/)
    assert.throws(() => compileArguments('time_limit', ['t', 'soon']), /number/)
    assert.throws(() => compileArguments('conf', ['maybe']), /truth value/)
  })
  it('custom commands take key=value words, JSON where it parses', () => {
    assert.deepEqual(compileArguments('proj.hello', ['name=bob', 'n=3', 'flags=[1,2]']), { name: 'bob', n: 3, flags: [1, 2] })
    assert.throws(() => compileArguments('proj.hello', ['bob']), /key=value/)
  })
  it("the visible command lists match celery inspect/control choices, plus tsq's inspect concurrency", () => {
    assert.deepEqual(visibleCommands('inspect'), [
      'active',
      'active_queues',
      'clock',
      'concurrency',
      'conf',
      'memdump',
      'memsample',
      'objgraph',
      'ping',
      'query_task',
      'registered',
      'report',
      'reserved',
      'revoked',
      'scheduled',
      'stats',
    ])
    assert.deepEqual(visibleCommands('control'), [
      'add_consumer',
      'autoscale',
      'cancel_consumer',
      'disable_events',
      'election',
      'enable_events',
      'heartbeat',
      'pool_grow',
      'pool_restart',
      'pool_shrink',
      'rate_limit',
      'revoke',
      'shutdown',
      'terminate',
      'time_limit',
    ])
    assert.equal(CONTROL_COMMANDS.hello?.visible, false)
  })
})
