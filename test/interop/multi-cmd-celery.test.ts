// `tsq multi --cmd` plans the command Celery's own `celery multi show` prints for
// the same arguments (Celery 5.2.6; the unit tests are test/unit/multi/multi-cmd.test.ts).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { describe, it } from 'node:test'
import { expandNodes, parseMultiArgs, planNode } from '../../src/multi/index.js'

const PYTHON = '/usr/bin/python3'
const hasCelery = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import celery'], { stdio: 'ignore' }).status === 0

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

describe('multi --cmd, beside Celery', () => {
  it('is what `celery multi show` prints for the same arguments', { skip: hasCelery ? false : 'Python Celery is not installed' }, () => {
    const args = ['1', '-A', 'proj', '--cmd=-m celery worker --detach', '-b', 'redis://x', '-c', '3', '--executable=/usr/bin/python3']
    const shown = spawnSync(PYTHON, ['-m', 'celery', 'multi', 'show', ...args], { encoding: 'utf8' })
    assert.equal(shown.status, 0, shown.stderr)
    const p = plan(args)
    assert.equal([p.executable, ...p.argv].join(' '), shown.stdout.trim())
  })
})
