// docs/errors.md's exit-code table says what the code does: every error code
// with a status of its own sits in the row of that status, and every status a
// command can end with has a row.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { it } from 'node:test'
import { ExitCode, exitCodesByErrorCode } from '../../src/protocol/index.js'

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8')
/** The table's rows: status, and the error codes of its last column. */
const rows = new Map(
  [...doc.matchAll(/^\| (\d+) \| .*\|(.*)\|$/gm)].map((m) => [Number(m[1]), [...m[2]!.matchAll(/`([A-Z_]+)`/g)].map((c) => c[1]!)]),
)

it('docs/errors.md: each error code is in the row of its exit status, and each status has a row', () => {
  for (const status of Object.values(ExitCode)) assert.ok(rows.has(status), `no row for exit status ${status}`)
  for (const [code, status] of exitCodesByErrorCode()) {
    assert.ok(rows.get(status)?.includes(code), `${code} (exit ${status}) is not in the row of ${status}`)
  }
  for (const [status, codes] of rows) {
    for (const code of codes) {
      const mapped = exitCodesByErrorCode().find(([c]) => c === code)?.[1]
      // The broker's own codes (row 1) have no entry: a BrokerRequestError ends with 1 whatever its code.
      if (mapped !== undefined) assert.equal(mapped, status, `${code} is listed under ${status}`)
    }
  }
})
