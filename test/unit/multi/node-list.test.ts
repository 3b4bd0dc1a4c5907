import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { expandNodes, parseMultiArgs, planNode, type NodeSpec } from '../../../src/multi/index.js'

const HOST = 'vm'
const nodes = (args: string[], isBoolean?: (o: string) => boolean): NodeSpec[] =>
  expandNodes(parseMultiArgs(args, { isBoolean }), { hostname: HOST })
const names = (args: string[]) => nodes(args).map((n) => n.name)
const opts = (n: NodeSpec) => Object.fromEntries(n.options)

describe('spec §9 option parsing', () => {
  it('--opt=value and -x value; a short option takes the next word unless it starts with -', () => {
    const p = parseMultiArgs(['3', '-c', '3', '--loglevel=INFO', '-E', '-Q', 'a,b'])
    assert.deepEqual(p.values, ['3'])
    assert.deepEqual(
      [...p.options],
      [
        ['-c', '3'],
        ['--loglevel', 'INFO'],
        ['-E', null],
        ['-Q', 'a,b'],
      ],
    )
  })

  it('[--opt value] is read as --opt=value (Celery would take value as a node name)', () => {
    const p = parseMultiArgs(['w1', '--loglevel', 'INFO', 'w2'])
    assert.deepEqual(p.values, ['w1', 'w2'])
    assert.equal(p.options.get('--loglevel'), 'INFO')
  })

  it('a known boolean flag leaves the next word a node name', () => {
    const p = parseMultiArgs(['--purge', 'w1', '-E', 'w2'], { isBoolean: (o) => o === '--purge' || o === '-E' })
    assert.deepEqual(p.values, ['w1', 'w2'])
    assert.deepEqual(
      [...p.options],
      [
        ['--purge', null],
        ['-E', null],
      ],
    )
  })

  it('everything after -- is passed through verbatim', () => {
    const p = parseMultiArgs(['2', '-c', '1', '--', '-E', '--x=1'])
    assert.deepEqual(p.passthrough, ['-E', '--x=1'])
    assert.deepEqual(p.values, ['2'])
  })

  it('per-node namespaces: -c:1-3 10, --queues:w1=a,b, --queues:w1 a,b', () => {
    const p = parseMultiArgs(['-c:1-3', '10', '--queues:w1=a,b', '--queues:w2', 'c'])
    assert.equal(p.namespaces.get('1-3')!.get('-c'), '10')
    assert.equal(p.namespaces.get('w1')!.get('--queues'), 'a,b')
    assert.equal(p.namespaces.get('w2')!.get('--queues'), 'c')
  })
})

describe('spec §9 node names', () => {
  it('a count gives celery1..N@host, with --range-prefix', () => {
    assert.deepEqual(names(['3']), ['celery1@vm', 'celery2@vm', 'celery3@vm'])
    assert.deepEqual(names(['2', '--range-prefix=w']), ['w1@vm', 'w2@vm'])
  })

  it('--hostname / -n sets the host part', () => {
    assert.deepEqual(names(['3', '--hostname=h.example.com']), ['celery1@h.example.com', 'celery2@h.example.com', 'celery3@h.example.com'])
    assert.deepEqual(names(['w1', '-n', 'box']), ['w1@box'])
  })

  it('names, w1@%h and full names', () => {
    assert.deepEqual(names(['w1', 'w2']), ['w1@vm', 'w2@vm'])
    assert.deepEqual(names(['w1@%h', 'foo@bar.example.com']), ['w1@vm', 'foo@bar.example.com'])
  })

  it('--prefix applies to names, --suffix replaces the host, --suffix=\'""\' empties it', () => {
    assert.deepEqual(names(['a', 'b', '--prefix=x-']), ['x-a@vm', 'x-b@vm'])
    assert.deepEqual(names(['a', '--suffix=other']), ['a@other'])
    assert.deepEqual(names(['a', '--suffix=""']), ['a@'])
  })

  it('multi options never reach the workers', () => {
    const [n] = nodes(['w1', '--hostname=h', '--prefix=p', '--range-prefix=r', '-c', '2'])
    assert.deepEqual(opts(n!), { '-c': '2' })
  })
})

describe('spec §9 per-node options', () => {
  it('-c 3 -c:1 10: the per-node value replaces the global one in place', () => {
    const ns = nodes(['3', '-c', '3', '-c:1', '10', '-A', 'tasks'])
    assert.deepEqual(
      ns.map((n) => [...n.options]),
      [
        [
          ['-c', '10'],
          ['-A', 'tasks'],
        ],
        [
          ['-c', '3'],
          ['-A', 'tasks'],
        ],
        [
          ['-c', '3'],
          ['-A', 'tasks'],
        ],
      ],
    )
  })

  it('ranges, lists, indexes and names', () => {
    const ns = nodes(['4', '-c:1-2', '5', '-Q:3,4', 'q', '-l:4', 'INFO'])
    assert.deepEqual(ns.map(opts), [{ '-c': '5' }, { '-c': '5' }, { '-Q': 'q' }, { '-Q': 'q', '-l': 'INFO' }])
    const named = nodes(['w1', 'w2', 'w3', '-c:w1', '4', '-Q:w1,w2', 'a,b', '--queues:w3=c', '-c:2', '9'])
    assert.deepEqual(named.map(opts), [{ '-c': '4', '-Q': 'a,b' }, { '-Q': 'a,b', '-c': '9' }, { '--queues': 'c' }])
  })

  it('a full node name is a namespace too', () => {
    const ns = nodes(['w1', 'w2', '-c:w2@vm', '7'])
    assert.deepEqual(ns.map(opts), [{}, { '-c': '7' }])
  })

  it('an index out of range is an error', () => {
    assert.throws(() => nodes(['2', '-c:3', '1']), /No node at index '3'/)
    assert.throws(() => nodes(['2', '-c:0', '1']), /Indexes start at 1/)
  })
})

describe('spec §9 per-node argv', () => {
  const ctx = {
    executable: '/usr/bin/node',
    script: '/opt/tsq/bin/run.js',
    cwd: '/work',
    runDir: '/home/u/.tsq/run',
    logDir: '/home/u/.tsq/log',
  }

  it("matches Celery's captured show, with tsq's worker command", () => {
    const ns = nodes(['3', '-c', '3', '-c:1', '10', '-A', 'tasks', '--pidfile=/r/%n.pid', '--logfile=/l/%n%I.log'])
    const plan = planNode(ns[0]!, ctx)
    assert.deepEqual(plan.argv, [
      '/opt/tsq/bin/run.js',
      'worker',
      '--detach',
      '-A',
      'tasks',
      '-c',
      '10',
      '--pidfile=/r/celery1.pid',
      '--logfile=/l/celery1%I.log',
      '-n',
      'celery1@vm',
    ])
    assert.equal(plan.pidfile, '/r/celery1.pid')
    assert.equal(plan.logfile, '/l/celery1%I.log')
  })

  it('defaults pidfile and logfile to the per-user dirs, after -n; passthrough last', () => {
    const plan = planNode(nodes(['w1', '-b', 'amqp://h//', '-l', 'INFO', '--', '-E'])[0]!, ctx)
    assert.deepEqual(plan.argv, [
      '/opt/tsq/bin/run.js',
      'worker',
      '--detach',
      '-b',
      'amqp://h//',
      '-l',
      'INFO',
      '-n',
      'w1@vm',
      '--pidfile=/home/u/.tsq/run/w1.pid',
      '--logfile=/home/u/.tsq/log/w1%I.log',
      '-E',
    ])
  })

  it("--cmd replaces tsq's own worker command (expanded per node); the global options follow it", () => {
    const plan = planNode(nodes(['w1', '--cmd', '/opt/tsq-next/bin/run.js worker --detach', '-A', 'tasks', '-c', '2'])[0]!, ctx)
    assert.deepEqual(plan.argv, [
      '/opt/tsq-next/bin/run.js',
      'worker',
      '--detach',
      '-A',
      'tasks',
      '-c',
      '2',
      '-n',
      'w1@vm',
      '--pidfile=/home/u/.tsq/run/w1.pid',
      '--logfile=/home/u/.tsq/log/w1%I.log',
    ])
    assert.deepEqual([...plan.options.keys()], ['--cmd', '-A', '-c'], 'kept among the options, so restart remembers it')
  })

  it('option values expand %n %h %d per node; relative paths resolve against the cwd', () => {
    const plan = planNode(nodes(['w1', '--pidfile=run/%n-%d.pid', '-Q', '%n'])[0]!, ctx)
    assert.equal(plan.pidfile, '/work/run/w1-vm.pid')
    assert.ok(plan.argv.includes('-Q') && plan.argv[plan.argv.indexOf('-Q') + 1] === 'w1')
  })
})
