// `tsq result` of a stored result holding ints past 2**53: the line prints
// Python's repr and `--json` the digits as stored (kombu's JSON), where
// JSON.stringify would throw on the BigInt.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { FileResultBackend } from '../../src/backends/file-backend.js'
import { encodeResultMeta } from '../../src/protocol/index.js'
import { runTsq } from '../helpers/cli.js'

describe('tsq result: ints past 2**53', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-result-bigints-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('prints them exact, as a line and as --json', async () => {
    await new FileResultBackend(dir).store(
      'big-1',
      encodeResultMeta({ taskId: 'big-1', status: 'SUCCESS', result: [18446744073709551617n, -(2n ** 70n), 7] }),
      'SUCCESS',
    )
    const line = await runTsq(['result', 'big-1', '--result-backend', `file://${dir}`])
    assert.equal(line.code, 0, line.stderr)
    assert.equal(line.stdout.trim(), '[18446744073709551617, -1180591620717411303424, 7]')
    const json = await runTsq(['result', 'big-1', '--result-backend', `file://${dir}`, '--json'])
    assert.equal(json.code, 0, json.stderr)
    assert.match(json.stdout, /"result": \[18446744073709551617, -1180591620717411303424, 7\]/)
    assert.equal((JSON.parse(json.stdout) as { status: string }).status, 'SUCCESS')
  })
})
