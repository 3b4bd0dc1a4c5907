import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  inspectPid,
  runMulti,
  takeReservedOptions,
  takeSignal,
  workerNodeOf,
  type MultiOutput,
  type MultiToolDeps,
} from '../../../src/multi/index.js'

function capture(): { out: MultiOutput; lines: string[]; errors: string[] } {
  const lines: string[] = []
  const errors: string[] = []
  const id = (s: string) => s
  return {
    lines,
    errors,
    out: {
      note: (t) => lines.push(`note:${t}`),
      say: (t) => lines.push(t),
      info: () => undefined,
      warn: (t) => errors.push(t),
      paint: { ok: id, failed: id, down: id, blue: id },
    },
  }
}

const dir = mkdtempSync(join(tmpdir(), 'tsq-multi-unit-'))
after(() => rmSync(dir, { recursive: true, force: true }))

function deps(c: ReturnType<typeof capture>): MultiToolDeps {
  return {
    executable: '/usr/bin/node',
    script: '/opt/tsq/bin/run.js',
    cwd: dir,
    hostname: 'vm',
    runDir: join(dir, 'run'),
    logDir: join(dir, 'log'),
    version: '0.1.0',
    isBoolean: (o) => o === '-E',
    out: () => c.out,
    ping: async () => [],
    brokerFor: async () => 'file:///nowhere',
  }
}

describe('tsq multi show/names/get/expand (spec §9)', () => {
  it('[names] one node name per line; --json gives the list', async () => {
    const c = capture()
    const r = await runMulti(['names', '3', '--hostname=h.example.com'], deps(c))
    assert.deepEqual(c.lines, ['celery1@h.example.com\ncelery2@h.example.com\ncelery3@h.example.com'])
    assert.deepEqual(r.json, ['celery1@h.example.com', 'celery2@h.example.com', 'celery3@h.example.com'])
    assert.equal(r.exitCode, 0)
  })

  it('[show] the full command per node, executable first', async () => {
    const c = capture()
    const r = await runMulti(
      ['show', '3', '-c', '3', '-c:1', '10', '-A', 'tasks', '--pidfile=/r/%n.pid', '--logfile=/l/%n%I.log', '--nosplash'],
      deps(c),
    )
    const shown = c.lines[0]!.split('\n')
    assert.equal(
      shown[0],
      '/usr/bin/node /opt/tsq/bin/run.js worker --detach -A tasks -c 10 --pidfile=/r/celery1.pid --logfile=/l/celery1%I.log -n celery1@vm',
    )
    assert.equal(
      shown[2],
      '/usr/bin/node /opt/tsq/bin/run.js worker --detach -A tasks -c 3 --pidfile=/r/celery3.pid --logfile=/l/celery3%I.log -n celery3@vm',
    )
    const json = r.json as Array<{ node: string; argv: string[]; pidfile: string }>
    assert.equal(json[1]!.node, 'celery2@vm')
    assert.equal(json[1]!.argv[0], '/usr/bin/node')
    assert.equal(json[1]!.pidfile, '/r/celery2.pid')
  })

  it('[get] prints the argv without the executable; an unknown node exits 1', async () => {
    const c = capture()
    const r = await runMulti(['get', 'w2@vm', 'w1', 'w2', '-c:w2', '4', '--pidfile=/r/%n.pid', '--logfile=/l/%n.log'], deps(c))
    assert.deepEqual(c.lines, ['/opt/tsq/bin/run.js worker --detach --pidfile=/r/w2.pid --logfile=/l/w2.log -c 4 -n w2@vm'])
    assert.equal(r.exitCode, 0)
    const c2 = capture()
    assert.equal((await runMulti(['get', 'nope@vm', 'w1'], deps(c2))).exitCode, 1)
    assert.deepEqual(c2.lines, [])
  })

  it('[expand] captured: %h|%n|%N|%d|%p|%i|%I|%% for celery1@h.example.com', async () => {
    const c = capture()
    await runMulti(['expand', '%h|%n|%N|%d|%p|%i|%I|%%', '1', '--hostname=h.example.com'], deps(c))
    assert.deepEqual(c.lines, ['celery1@h.example.com|celery1|celery1|h.example.com|celery1@h.example.com|%i|%I|%%'])
  })

  it('an unknown command is a usage error', async () => {
    await assert.rejects(runMulti(['bogus', '3'], deps(capture())), (e: Error & { code?: string }) => e.code === 'USAGE')
  })
})

describe('reserved options and signals', () => {
  it('takes --quiet/-q/--verbose/--no-color/--nosplash/--json/--timeout before --', () => {
    const { argv, reserved } = takeReservedOptions(['stopwait', '3', '-q', '--timeout', '5', '--json', '--', '-q'])
    assert.deepEqual(argv, ['stopwait', '3', '--', '-q'])
    assert.equal(reserved.quiet, true)
    assert.equal(reserved.json, true)
    assert.equal(reserved.timeout, 5)
  })

  it('the last -N / -NAME / -SIGNAME is the signal; default TERM; -A stays an option', () => {
    assert.deepEqual(takeSignal(['3', '-A', 'x']), { argv: ['3', '-A', 'x'], signal: 'SIGTERM' })
    assert.deepEqual(takeSignal(['3', '-9']), { argv: ['3'], signal: 'SIGKILL' })
    assert.deepEqual(takeSignal(['3', '-INT', '-SIGQUIT']).signal, 'SIGQUIT')
    assert.deepEqual(takeSignal(['3', '-kill']).signal, 'SIGTERM')
  })
})

describe('pid identity', () => {
  it('recognises a tsq worker argv and its node name', () => {
    assert.equal(workerNodeOf(['/usr/bin/node', '/x/bin/run.js', 'worker', '-A', 't.js', '-n', 'celery1@vm'], 'vm'), 'celery1@vm')
    assert.equal(workerNodeOf(['/usr/bin/node', '/x/bin/run.js', 'worker', '--hostname=w1@%h'], 'vm'), 'w1@vm')
    assert.equal(workerNodeOf(['/usr/bin/node', '/x/bin/run.js', 'worker'], 'vm'), 'celery@vm')
    assert.equal(workerNodeOf(['sleep', '60'], 'vm'), null)
    assert.equal(workerNodeOf(['/usr/bin/node', '/x/bin/run.js', 'inspect', 'ping'], 'vm'), null)
  })

  it('a pidfile holding an unrelated live process is neither trusted nor signalled by stop', async () => {
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' })
    try {
      const pid = sleeper.pid!
      assert.equal(inspectPid(pid, 'celery1@vm', 'vm').kind, 'foreign')
      const pidfile = join(dir, 'celery1.pid')
      writeFileSync(pidfile, `${pid}\n`)
      const c = capture()
      const r = await runMulti(['stop', '1', `--pidfile=${join(dir, '%n.pid')}`, '-9'], deps(c))
      const results = r.json as Array<{ status: string; pid: number }>
      assert.equal(results[0]!.status, 'NOT_SIGNALLED')
      assert.equal(results[0]!.pid, pid)
      assert.equal(sleeper.exitCode, null)
      assert.equal(sleeper.signalCode, null)
      process.kill(pid, 0)
      assert.equal(existsSync(pidfile), false, 'the untrusted pidfile is removed')
      assert.match(c.errors.join('\n'), /not signalled/)
    } finally {
      sleeper.kill('SIGKILL')
    }
  })
})
