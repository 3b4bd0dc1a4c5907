// tsq-test: slow (ESLint loads its parser and plugins)
// The layer order of src/ is an ESLint error (eslint.config.js: LAYERS and its
// zones): an upward or sideways import fails the lint, and so does one that
// reaches past a folder's index.ts. Each case lints a scratch file through
// ESLint's Node API, so a config that stopped seeing imports would fail here.
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ESLint } from 'eslint'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const eslint = new ESLint({ cwd: ROOT })

/** The rules that fired on `text` as the file `path` of the repository, with their lines. */
async function lint(path: string, text: string): Promise<string[]> {
  const [result] = await eslint.lintText(text, { filePath: resolve(ROOT, path) })
  return result!.messages
    .filter((m) => m.ruleId?.startsWith('import-x/') || m.ruleId === 'no-restricted-imports')
    .map((m) => `${m.line} ${m.ruleId}`)
}

describe('layers (eslint.config.js): imports point down only, into a folder through its index', () => {
  it('every entry of src/ has a row in LAYERS', async () => {
    const { LAYERS } = (await import(pathToFileURL(resolve(ROOT, 'eslint.config.js')).href)) as { LAYERS: string[][] }
    assert.deepEqual(readdirSync(resolve(ROOT, 'src')).sort(), LAYERS.flat().sort())
  })

  it('an import of a higher layer is an error, as a static import, a re-export and a dynamic import', async () => {
    const text =
      "import { Worker } from '../worker/worker.js'\nexport * from '../cli/errors.js'\nexport const w = await import('../beat/index.js')\nexport { Worker }\n"
    assert.deepEqual(await lint('src/protocol/layer-probe.ts', text), [
      '1 import-x/no-restricted-paths',
      '2 import-x/no-restricted-paths',
      '3 import-x/no-restricted-paths',
    ])
  })

  it('an import of a peer (a folder on the same row) is an error', async () => {
    assert.deepEqual(await lint('src/worker/layer-probe.ts', "export * from '../beat/index.js'\n"), ['1 import-x/no-restricted-paths'])
  })

  it('a lower layer reached through its index is clean; past it, an error', async () => {
    assert.deepEqual(await lint('src/worker/layer-probe.ts', "export { taskLabel } from '../protocol/index.js'\n"), [])
    assert.deepEqual(await lint('src/worker/layer-probe.ts', "export { taskLabel } from '../protocol/secrets.js'\n"), [
      '1 import-x/no-restricted-paths',
    ])
  })

  it('an import the resolver cannot find is an error, so none passes the zones unseen', async () => {
    assert.deepEqual(await lint('src/protocol/layer-probe.ts', "export * from '../worker/no-such-module.js'\n"), [
      '1 import-x/no-unresolved',
    ])
  })

  it('protocol/ stays pure: a module that does I/O is an error there, fine elsewhere', async () => {
    const text =
      "export { readFileSync } from 'node:fs'\nexport { randomUUID } from 'node:crypto'\nexport { default as Redis } from 'ioredis'\n"
    assert.deepEqual(await lint('src/protocol/layer-probe.ts', text), ['1 no-restricted-imports', '3 no-restricted-imports'])
    assert.deepEqual(await lint('src/transport/layer-probe.ts', text), [])
  })
})
