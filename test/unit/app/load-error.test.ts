// Where a task module that does not load went wrong, read from the errors
// Node and tsx give: esbuild's `file:line:col: ERROR:` lines (columns counted
// from 0) become a place counted from 1, as editors count, with every further
// error listed; Node's own arrow (a CommonJS syntax error) is read as it is;
// the code frame keeps a tab under a tab so the caret lines up.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { codeFrame, describeLoadFailure } from '../../../src/app/load-error.js'

describe('a load failure, described', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-load-error-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it("esbuild's errors (from tsx): the first with its place and frame, the rest listed", () => {
    const file = join(dir, 'tasks.ts')
    writeFileSync(file, 'const a = (1\nconst b = 2\nlet = 3\n')
    const error = new Error(
      `Transform failed with 2 errors:\n${file}:2:0: ERROR: Expected ")" but found "const"\n${file}:3:4: ERROR: Expected identifier but found "="`,
    )
    const failure = describeLoadFailure(file, error)
    assert.equal(failure.reason, 'Expected ")" but found "const"')
    assert.deepEqual(failure.location, { file, line: 2, column: 1 })
    assert.equal(failure.detail, `  1 | const a = (1\n> 2 | const b = 2\n    | ^\n  also ${file}:3:5: Expected identifier but found "="`)
  })

  it("Node's arrow on a CommonJS syntax error", () => {
    const file = join(dir, 'old.cjs')
    writeFileSync(file, 'module.exports = {\n  a: 1,,\n}\n')
    const error = new SyntaxError("Unexpected token ','")
    error.stack = `${file}:2\n  a: 1,,\n       ^\n\nSyntaxError: Unexpected token ','\n    at wrapSafe (node:internal/modules/cjs/loader:1464:18)`
    const failure = describeLoadFailure(file, error)
    assert.equal(failure.reason, "SyntaxError: Unexpected token ','")
    assert.deepEqual(failure.location, { file, line: 2, column: 8 })
  })

  it('an error without a place in the user’s files is the message alone', () => {
    const error = Object.assign(new Error("Cannot find package 'nope' imported from /x.mjs"), {
      stack: "Error: Cannot find package 'nope'\n    at packageResolve (node:internal/modules/esm/resolve:873:9)",
    })
    assert.deepEqual(describeLoadFailure('/x.mjs', error), { reason: "Cannot find package 'nope' imported from /x.mjs" })
  })

  it('the frame: two lines before, the line, a caret under the column; tabs stay tabs', () => {
    assert.equal(codeFrame('one\ntwo\n\tthree(\nfour', 3, 7), '  1 | one\n  2 | two\n> 3 | \tthree(\n    | \t     ^')
    assert.equal(codeFrame('x', 1, 1), '> 1 | x\n    | ^')
    assert.equal(codeFrame(Array(12).fill('l').join('\n'), 10, 1).split('\n')[0], '   8 | l')
  })
})
