// The dashboard's basic auth given four ways: --basic-auth, --basic-auth-file,
// $TSQ_DASHBOARD_BASIC_AUTH and Flower's $FLOWER_BASIC_AUTH. Each refuses a
// request without the credentials (401) and serves one with them; the file and
// environment forms keep the password out of the process's command line.
import assert from 'node:assert/strict'
import { chmodSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { embeddedBrokerEnv, runTsq, tempTsqHome } from '../helpers/cli.js'
import { startDashboard } from '../helpers/dashboard.js'

const home = tempTsqHome()
const env = embeddedBrokerEnv(home, { FLOWER_BASIC_AUTH: '', TSQ_DASHBOARD_BASIC_AUTH: '' })
const PASSWORD = `dash-pw-${process.pid}`

async function probe(
  args: string[],
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<{ anonymous: number; wrong: number; right: number; cmdline: string }> {
  const dashboard = await startDashboard(args, { env: { ...env, ...extraEnv } })
  try {
    const auth = (user: string, pass: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` })
    const anonymous = (await fetch(`${dashboard.url}/api/workers`)).status
    const wrong = (await fetch(`${dashboard.url}/api/workers`, { headers: auth('ann', 'nope') })).status
    const right = (await fetch(`${dashboard.url}/api/workers`, { headers: auth('ann', PASSWORD) })).status
    const cmdline = readFileSync(`/proc/${dashboard.child.pid}/cmdline`, 'utf8')
    return { anonymous, wrong, right, cmdline }
  } finally {
    await dashboard.stop()
  }
}

describe("the dashboard's basic auth (file://)", () => {
  it('--basic-auth still works', async () => {
    const r = await probe(['--basic-auth', `ann:${PASSWORD}`])
    assert.deepEqual([r.anonymous, r.wrong, r.right], [401, 401, 200])
  })

  it('$FLOWER_BASIC_AUTH, as Flower reads it, keeps the password out of the command line', async () => {
    const r = await probe([], { FLOWER_BASIC_AUTH: `bob:other,ann:${PASSWORD}` })
    assert.deepEqual([r.anonymous, r.wrong, r.right], [401, 401, 200])
    assert.ok(!r.cmdline.includes(PASSWORD), r.cmdline)
  })

  it('$TSQ_DASHBOARD_BASIC_AUTH wins over $FLOWER_BASIC_AUTH', async () => {
    const r = await probe([], { TSQ_DASHBOARD_BASIC_AUTH: `ann:${PASSWORD}`, FLOWER_BASIC_AUTH: 'ann:flower-pw' })
    assert.deepEqual([r.anonymous, r.wrong, r.right], [401, 401, 200])
  })

  it('--basic-auth-file reads user:password lines from a file', async () => {
    const file = join(home, 'dashboard-users')
    writeFileSync(file, `# who may look\nann:${PASSWORD}\nbob:other\n`)
    chmodSync(file, 0o600)
    const r = await probe(['--basic-auth-file', file])
    assert.deepEqual([r.anonymous, r.wrong, r.right], [401, 401, 200])
    assert.ok(!r.cmdline.includes(PASSWORD), r.cmdline)
  })

  it('a bad entry in the environment is one line that does not echo it; the flag and the file together are refused', async () => {
    const bad = await runTsq(['dashboard', '--port', '0'], { env: { ...env, FLOWER_BASIC_AUTH: PASSWORD } })
    assert.notEqual(bad.code, 0)
    assert.match(bad.stderr, /FLOWER_BASIC_AUTH: expected user:password/)
    assert.ok(!bad.stderr.includes(PASSWORD), bad.stderr)
    const both = await runTsq(['dashboard', '--port', '0', '--basic-auth', 'a:b', '--basic-auth-file', join(home, 'dashboard-users')], {
      env,
    })
    assert.notEqual(both.code, 0)
    assert.match(both.stderr, /give one of them/)
  })
})
