// bin/code-cache.js: a cache tied to one build of the bundle, refreshed when a
// run exercises something new, and never needed for correctness.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, existsSync, rmSync, writeFileSync, utimesSync } from 'node:fs'
import Module from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { ROOT } from '../../helpers/cli.js'

const LOADER = join(ROOT, 'bin', 'code-cache.js')

function header(file: string): { stamp: string; keys: string[] } {
  const raw = readFileSync(`${file}.v8cache`)
  return JSON.parse(raw.subarray(0, raw.indexOf(10)).toString('utf8'))
}

/** Loads `file` in a fresh process, as bin/run.js does, and prints what it exports. */
function load(file: string, key: string): string {
  const script = `const { requireWithCodeCache } = require(${JSON.stringify(LOADER)});
    const m = requireWithCodeCache(${JSON.stringify(file)}, () => ${JSON.stringify(key)});
    process.stdout.write(m.answer())`
  return execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })
}

describe(
  'code cache loader',
  {
    skip:
      typeof (Module as unknown as { enableCompileCache?: unknown }).enableCompileCache === 'function' &&
      'this Node has module.enableCompileCache, which the loader uses instead',
  },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsq-code-cache-'))
    after(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'bundle.cjs')
    writeFileSync(join(dir, 'helper.cjs'), 'module.exports = (x) => x * 2\n')
    writeFileSync(file, "const double = require('./helper.cjs'); exports.answer = () => String(double(21))\n")

    it("runs the module (with its own require) and writes a cache under the run's key", () => {
      assert.equal(load(file, 'amqp'), '42')
      assert.deepEqual(header(file).keys, ['amqp'])
    })

    it('reuses the cache for a known key and adds a new key to it', () => {
      const before = readFileSync(`${file}.v8cache`)
      assert.equal(load(file, 'amqp'), '42')
      assert.ok(readFileSync(`${file}.v8cache`).equals(before), 'an already covered key does not rewrite the cache')
      assert.equal(load(file, 'redis'), '42')
      assert.deepEqual(header(file).keys, ['amqp', 'redis'])
    })

    it('ignores a cache made for another build of the bundle, even one of the same length', () => {
      writeFileSync(file, "const double = require('./helper.cjs'); exports.answer = () => String(double(12))\n")
      utimesSync(file, new Date(), new Date(Date.now() + 5_000))
      assert.equal(load(file, 'amqp'), '24')
      assert.deepEqual(header(file).keys, ['amqp'])
    })

    it('runs without a cache when the cache is garbage', () => {
      writeFileSync(`${file}.v8cache`, 'not a cache')
      assert.equal(load(file, 'file'), '24')
      assert.ok(existsSync(`${file}.v8cache`))
      assert.deepEqual(header(file).keys, ['file'])
    })
  },
)
