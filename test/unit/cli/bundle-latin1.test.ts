// The CLI's bundles stay Latin-1 text. V8 keeps every loaded script's source in
// the heap for the life of the process and stores it one byte per character
// only when no character is above U+00FF: one arrow or dash left in a comment
// doubled the 1.4 MB bundle to ~3 MB in every worker, child and thread
// (scripts/bundle.mjs strips comments for this reason).
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { ROOT } from '../../helpers/cli.js'

const BUNDLE = join(ROOT, 'dist', 'bundle')

describe('CLI bundle text', { skip: !existsSync(BUNDLE) && 'dist/bundle is missing: run npm run build first' }, () => {
  const files = existsSync(BUNDLE) ? readdirSync(BUNDLE).filter((f) => /\.(c?js)$/.test(f)) : []

  it('has the bundles to check', () => {
    assert.ok(files.includes('tsq.js'), `dist/bundle holds ${files.join(', ')}`)
  })

  for (const file of files) {
    it(`${file} has no character above U+00FF`, () => {
      const text = readFileSync(join(BUNDLE, file), 'utf8')
      const at = [...text].findIndex((c) => c.codePointAt(0)! > 0xff)
      assert.equal(at, -1, at === -1 ? '' : `${file}: ${JSON.stringify(text.slice(Math.max(0, at - 60), at + 20))}`)
    })
  }
})
