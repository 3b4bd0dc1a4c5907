// app.close() always resolves: after a send or a result wait failed to
// connect (a Redis or RabbitMQ that is not there), the connection that never
// opened has nothing to close, and a script's `await app.close()` must not
// throw the same error again, nor end the script on an unhandled rejection.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createApp } from '../../../src/app/app.js'

/** Nothing listens on port 1 of this machine: every connect is refused at once. */
const NOWHERE_REDIS = 'redis://127.0.0.1:1/0'
const NOWHERE_AMQP = 'amqp://guest:guest@127.0.0.1:1//'
const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

describe('app.close() after a failed connect', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-close-after-failure-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  for (const broker of [NOWHERE_REDIS, NOWHERE_AMQP]) {
    it(`resolves after delay() rejected on ${broker}`, { timeout: 60_000 }, async () => {
      const app = createApp({ name: 'closing', broker, resultBackend: `file://${dir}/results` })
      const add = app.task('closing.add', (x: number, y: number) => x + y)
      await assert.rejects(add.delay(1, 2), /cannot connect to/)
      await assert.doesNotReject(app.close())
      // Closing twice is as quiet.
      await assert.doesNotReject(app.close())
    })
  }

  it('resolves after a result wait rejected on an unreachable result backend', { timeout: 60_000 }, async () => {
    const app = createApp({ name: 'closing', broker: `file://${dir}/broker`, resultBackend: NOWHERE_REDIS })
    await assert.rejects(app.asyncResult('0b2c5f9e-0000-4000-8000-000000000000').get({ timeout: 1 }), /127\.0\.0\.1:1/)
    await assert.doesNotReject(app.close())
  })

  it('a script that awaits app.close() after the failure ends normally (exit 0)', { timeout: 60_000 }, async () => {
    const script = join(dir, 'script.mts')
    writeFileSync(
      script,
      [
        `import { createApp } from ${JSON.stringify(join(ROOT, 'src/index.ts'))}`,
        `const app = createApp({ name: 'closing', broker: ${JSON.stringify(NOWHERE_REDIS)}, resultBackend: ${JSON.stringify(NOWHERE_REDIS)} })`,
        "const add = app.task('closing.add', (x: number, y: number) => x + y)",
        'try {',
        '  await add.delay(1, 2)',
        '} catch (error) {',
        "  console.log('send failed:', (error as Error).message)",
        '} finally {',
        '  await app.close()',
        '}',
        "console.log('closed')",
      ].join('\n'),
    )
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    assert.equal(code, 0, out)
    assert.equal(out, 'send failed: cannot connect to redis://127.0.0.1:1/0: connect ECONNREFUSED 127.0.0.1:1\nclosed\n')
  })
})
