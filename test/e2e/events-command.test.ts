// `tsq events`: Celery's `celery events --dump` for scripts. A heartbeat line
// as Celery's dumper prints it, JSON events with --json, --count and --timeout
// to stop; in a terminal (a pty from script(1)), the live view of Celery's
// curses monitor; and one clear line when there is no terminal.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { hostname } from 'node:os'
import { after, before, describe, it } from 'node:test'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { BIN, ROOT, runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'

describe('tsq events: bad input', () => {
  it('without --dump or --json and with no terminal, one line says what scripts use instead (exit 64)', async () => {
    const res = await runTsq(['events'])
    assert.equal(res.code, 64)
    assert.match(res.stderr, /live view in a terminal only; in scripts, print events with --dump \(lines\) or --json/)
  })

  it('a --timeout that is not a positive number is one line and exit 64', async () => {
    const res = await runTsq(['events', '--dump', '--timeout', 'soon'])
    assert.equal(res.code, 64)
    assert.equal(res.stderr, "Error: Invalid value for '--timeout': 'soon' is not a valid float.\n")
  })
})

for (const [kind, broker] of [
  ['redis', REDIS_URL],
  ['amqp', AMQP_URL],
] as const) {
  const skip = await brokerSkipReason(kind)
  describe(`tsq events on ${kind}`, { skip }, () => {
    const node = `${uniqueName('evcmd')}@${hostname()}`
    const queue = uniqueName('evcmd-q')
    let worker: SpawnedWorker | undefined

    before(async () => {
      worker = await startWorker(
        [
          '-A',
          `${ROOT}test/fixtures/tasks/interop-tasks.js`,
          '-b',
          broker,
          '-Q',
          queue,
          '-P',
          'solo',
          '-l',
          'INFO',
          '--heartbeat-interval',
          '1',
          '-E',
        ],
        { nodename: node },
      )
    })

    after(async () => {
      await worker?.stop()
      await deleteCeleryQueues(kind, broker, [queue])
    })

    it("--json --count 2: two worker events as JSON lines, with local_received as Celery's receiver adds it, then exit 0", async () => {
      const res = await runTsq(['events', '--json', '--count', '2', '-b', broker], { timeoutMs: 20_000 })
      assert.equal(res.code, 0, res.stderr)
      const events = res.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>)
      assert.equal(events.length, 2, res.stdout)
      for (const e of events) {
        assert.match(String(e.type), /^worker-/)
        assert.equal(typeof e.local_received, 'number')
      }
    })

    it('--dump: a heartbeat line as celery events --dump prints it; --timeout ends the capture with exit 0', async () => {
      const res = await runTsq(['events', '--dump', '--timeout', '3', '-b', broker], { timeoutMs: 20_000 })
      assert.equal(res.code, 0, res.stderr)
      const lines = res.stdout.split('\n')
      assert.equal(lines[0], '-> evdump: starting capture...')
      const beat = lines.find((l) => l.startsWith(`${node} [`))
      assert.ok(beat, res.stdout)
      assert.match(
        beat,
        /^\S+ \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?\] heartbeat: active=0, clock=\d+, freq=1\.0, loadavg=\[[\d., ]+\], local_received=[\d.]+, pid=\d+, processed=0, sw_ident=tsq, sw_sys=Linux, sw_ver=[\d.]+, utcoffset=-?\d+$/,
      )
    })

    it("in a terminal: the live view shows the worker and the task as Celery's monitor does; c revokes the selected task; q quits with exit 0", async () => {
      const screen = spawn(
        'script',
        ['-qfec', `stty cols 600 rows 30; '${process.execPath}' '${BIN}' events -b '${broker}'`, '/dev/null'],
        { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] },
      )
      let output = ''
      screen.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')))
      screen.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')))
      const exited = new Promise<number | null>((resolve) => screen.once('exit', (code) => resolve(code)))
      // eslint-disable-next-line no-control-regex -- matches the terminal escape (ESC) it strips
      const text = () => output.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '\n')
      try {
        await waitFor(() => text().includes(`Workers online: ${node}`), { what: 'the worker in the live view', timeoutMs: 20_000 })
        const call = await runTsq(['call', 'proj.add', '-a', '[20, 22]', '-b', broker, '-Q', queue, '--json'])
        assert.equal(call.code, 0, call.stderr)
        const { id } = JSON.parse(call.stdout) as { id: string }
        const row = new RegExp(`${id} +${node.replace(/[.]/g, '\\.')} +proj\\.add +\\d\\d:\\d\\d:\\d\\d SUCCESS`)
        await waitFor(() => row.test(text()), { what: "the task's row with SUCCESS", timeoutMs: 20_000 })
        // j selects the latest task, c revokes it, as in Celery's monitor; the worker's reply shows.
        screen.stdin.write('j')
        await waitFor(() => text().includes('Selected: '), { what: 'the selection' })
        screen.stdin.write('c')
        // Other workers on the broker may answer too (the wide terminal keeps every reply on the line); this one's reply must be among them.
        const reply = new RegExp(`Revoke ${id}: (.*; )?${node.replace(/[.]/g, '\\.')}: tasks ${id} flagged as revoked`)
        await waitFor(() => reply.test(text()), { what: 'the revoke reply', timeoutMs: 10_000 })
        screen.stdin.write('q')
        const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000))])
        assert.equal(code, 0, text().slice(-2000))
      } finally {
        screen.kill('SIGKILL')
      }
    })
  })
}
