// bin/run.js run as the `tsq` a shell finds (its sh lines, not `node bin/run.js`):
// for the one-shot remote commands (inspect, control, status, migrate, with no
// -A/--config) the launcher keeps NODE_EXTRA_CA_CERTS from Node's start, which
// reads and parses it before any JavaScript runs, and tsq adds the file to its
// own broker TLS connections instead (test/interop/tls.test.ts shows a private
// CA trusted that way). Node's own load is seen by the warning it prints for
// a file it cannot read; every other command line must still print it.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { ROOT, runTsq, type CliResult } from '../helpers/cli.js'

const NODE_WARNING = /Warning: Ignoring extra certs from `\/nonexistent\/tsq-ca\.pem`, load failed/
/** Nothing listens on port 1: the remote commands fail at once, without a broker. */
const NOWHERE = 'redis://127.0.0.1:1/0'

/** bin/run.js executed itself, with no broker or config module from the caller's shell, and the trick's switches unset. */
function runLauncher(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return runTsq(args, {
    asExecutable: true,
    env: {
      TSQ_BROKER_URL: '',
      CELERY_BROKER_URL: '',
      TSQ_CONFIG_MODULE: '',
      NO_COLOR: '1',
      TSQ_NO_TRICKS: '',
      TSQ_NO_DEFERRED_CA_CERTS: '',
      ...env,
    },
  })
}

const BAD_CA = { NODE_EXTRA_CA_CERTS: '/nonexistent/tsq-ca.pem' }

describe('the tsq launcher and NODE_EXTRA_CA_CERTS', () => {
  for (const args of [
    ['inspect', 'ping', '-b', NOWHERE, '-t', '1'],
    ['control', 'shutdown', '-b', NOWHERE, '-t', '1'],
    ['status', '-b', NOWHERE, '-t', '1'],
  ]) {
    it(`${args[0]}: Node does not load the file at start, and the command runs as before`, async () => {
      const r = await runLauncher(args, BAD_CA)
      assert.doesNotMatch(r.stderr, NODE_WARNING, r.stderr)
      assert.equal(r.code, 69, r.stderr)
      assert.match(r.stderr, /cannot connect to redis:\/\/127\.0\.0\.1:1\/0/)
    })
  }

  it('every other command line starts Node with the file, as `node bin/run.js` does', async () => {
    for (const args of [
      ['--version'],
      ['inspect', 'ping', '-A', './nowhere.js', '-b', NOWHERE, '-t', '1'],
      ['inspect', 'ping', '--config=nowhere', '-b', NOWHERE, '-t', '1'],
      ['result', '--help'],
    ]) {
      const r = await runLauncher(args, BAD_CA)
      assert.match(r.stderr, NODE_WARNING, `${args.join(' ')}:\n${r.stderr}`)
    }
    const withConfigModule = await runLauncher(['status', '-b', NOWHERE, '-t', '1'], { ...BAD_CA, TSQ_CONFIG_MODULE: 'nowhere' })
    assert.match(withConfigModule.stderr, NODE_WARNING, withConfigModule.stderr)
    // --use-openssl-ca changes which roots Node starts from: tsq does not guess them.
    const opensslCa = await runLauncher(['status', '-b', NOWHERE, '-t', '1'], { ...BAD_CA, NODE_OPTIONS: '--use-openssl-ca' })
    assert.match(opensslCa.stderr, NODE_WARNING, opensslCa.stderr)
  })

  it('TSQ_NO_DEFERRED_CA_CERTS or TSQ_NO_TRICKS: Node loads the file at start for the one-shot commands too', async () => {
    for (const off of [{ TSQ_NO_DEFERRED_CA_CERTS: '1' }, { TSQ_NO_TRICKS: '1' }]) {
      const r = await runLauncher(['status', '-b', NOWHERE, '-t', '1'], { ...BAD_CA, ...off })
      assert.match(r.stderr, NODE_WARNING, `${JSON.stringify(off)}:\n${r.stderr}`)
      assert.equal(r.code, 69, r.stderr)
    }
  })

  it('the user code and children of a deferred run see NODE_EXTRA_CA_CERTS as the user set it', async () => {
    // `status --help` is answered by oclif after the launcher deferred the file (status is a one-shot
    // command); the environment the process hands on must be the user's.
    const r = await runLauncher(['status', '--help'], BAD_CA)
    assert.equal(r.code, 0, r.stderr)
    assert.doesNotMatch(r.stderr, NODE_WARNING)
    const probe = await runLauncher(['status', '-b', NOWHERE, '-t', '1'], {
      ...BAD_CA,
      NODE_OPTIONS: `--require ${join(ROOT, 'test/fixtures/print-extra-ca-env.cjs')}`,
    })
    assert.match(probe.stderr, /at exit: NODE_EXTRA_CA_CERTS=\/nonexistent\/tsq-ca\.pem TSQ_DEFERRED_EXTRA_CA_CERTS=-/, probe.stderr)
  })
})
