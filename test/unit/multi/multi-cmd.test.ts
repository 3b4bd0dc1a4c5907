// `tsq multi --cmd`: the command each node runs, as Celery's multi --cmd
// (celery/apps/multi.py Node._prepare_argv). Checked against `celery multi
// show` of Celery 5.2.6 in test/interop/multi-cmd-celery.test.ts.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { expandNodes, parseMultiArgs, planNode, workerNodeOf } from '../../../src/multi/index.js'

function plan(args: string[]) {
  const [spec] = expandNodes(parseMultiArgs(args), { hostname: 'vm' })
  return planNode(spec!, {
    executable: '/usr/bin/node',
    script: '/r/bin/run.js',
    cwd: '/tmp',
    runDir: '/var/run/celery',
    logDir: '/var/log/celery',
  })
}

describe('multi --cmd', () => {
  it("a command that runs Celery's program takes the global options right after `celery`, in Celery's order", () => {
    const p = plan(['1', '-A', 'proj', '--cmd=-m celery worker --detach', '-b', 'redis://x', '-c', '3', '--executable=/usr/bin/python3'])
    assert.equal(p.executable, '/usr/bin/python3')
    assert.deepEqual(p.argv, [
      '-m',
      'celery',
      '-b',
      'redis://x',
      '-A',
      'proj',
      'worker',
      '--detach',
      '-c',
      '3',
      '--executable=/usr/bin/python3',
      '-n',
      'celery1@vm',
      '--pidfile=/var/run/celery/celery1.pid',
      '--logfile=/var/log/celery/celery1%I.log',
    ])
  })

  it("another tsq's command takes them after it, expanded per node", () => {
    const p = plan(['w1', '--cmd=/opt/tsq-%n/bin/run.js worker --detach', '-A', 'tasks'])
    assert.deepEqual(p.argv.slice(0, 5), ['/opt/tsq-w1/bin/run.js', 'worker', '--detach', '-A', 'tasks'])
  })

  it("stop and restart know the node's worker when it is Celery's, as a --cmd node runs it", () => {
    const argv = [
      '/usr/bin/python3',
      '-m',
      'celery',
      '-b',
      'redis://x',
      '-A',
      'proj',
      'worker',
      '-c',
      '3',
      '-n',
      'celery1@vm',
      '--pidfile=/p.pid',
    ]
    assert.equal(workerNodeOf(argv, 'vm'), 'celery1@vm')
    assert.equal(workerNodeOf(['/usr/local/bin/celery', '-A', 'proj', 'worker', '--hostname=w1@%h'], 'vm'), 'w1@vm')
    assert.equal(workerNodeOf(['/usr/bin/python3', '-m', 'celery', '-A', 'proj', 'beat'], 'vm'), null)
  })
})
