// An optional package (a SQL driver) that the project has not installed is one
// line naming the package and its `npm install`, code MISSING_PACKAGE, exit 69;
// a package that is there but broken inside (a file or a dependency of its own
// missing) is told as Node tells it, not as "install it".
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { ExitCode, MissingPackageError, importOptional, isPackageNotFound, isTsqError } from '../../../src/protocol/index.js'
import { requireSqlDriver } from '../../../src/backends/index.js'

/** A folder with `loader.mjs`, whose import() of `name` resolves from that folder, and the packages given. */
function project(packages: Record<string, string>): { dir: string; load: (name: string) => () => Promise<unknown> } {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-optional-'))
  for (const [name, source] of Object.entries(packages)) {
    mkdirSync(join(dir, 'node_modules', name), { recursive: true })
    writeFileSync(join(dir, 'node_modules', name, 'package.json'), JSON.stringify({ name, type: 'module', main: 'index.js' }))
    writeFileSync(join(dir, 'node_modules', name, 'index.js'), source)
  }
  writeFileSync(join(dir, 'loader.mjs'), 'export const load = (name) => () => import(name)\n')
  const loader = import(pathToFileURL(join(dir, 'loader.mjs')).href) as Promise<{ load: (name: string) => () => Promise<unknown> }>
  return { dir, load: (name) => async () => (await loader).load(name)() }
}

describe('importOptional', () => {
  const { dir, load } = project({
    'tsq-fake-driver': 'export const ok = 1\n',
    'tsq-fake-broken': "import 'tsq-fake-missing-dependency'\nexport const ok = 1\n",
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('gives the package when it is installed', async () => {
    const mod = (await importOptional(load('tsq-fake-driver'), 'tsq-fake-driver', 'x')) as { ok: number }
    assert.equal(mod.ok, 1)
  })

  it('a package that is not installed: one line naming it and its install command, exit 69', async () => {
    const error = await importOptional(load('tsq-fake-absent'), 'tsq-fake-absent', 'postgresql://u@h/db').then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    )
    assert.ok(error instanceof MissingPackageError)
    assert.ok(isTsqError(error))
    assert.equal(error.message, 'postgresql://u@h/db needs the "tsq-fake-absent" package: npm install tsq-fake-absent')
    assert.equal(error.code, 'MISSING_PACKAGE')
    assert.equal(error.exitCode, ExitCode.UNAVAILABLE)
    assert.equal(error.packageName, 'tsq-fake-absent')
    assert.equal((error.cause as { code?: string }).code, 'ERR_MODULE_NOT_FOUND')
  })

  it('an installed package missing a dependency of its own is Node’s error, unchanged', async () => {
    await assert.rejects(importOptional(load('tsq-fake-broken'), 'tsq-fake-broken', 'x'), (e: Error & { code?: string }) => {
      assert.equal(e instanceof MissingPackageError, false)
      assert.equal(e.code, 'ERR_MODULE_NOT_FOUND')
      assert.match(e.message, /tsq-fake-missing-dependency/)
      return true
    })
  })
})

describe('isPackageNotFound', () => {
  const esm = (name: string) =>
    Object.assign(new Error(`Cannot find package '${name}' imported from /app/x.js`), { code: 'ERR_MODULE_NOT_FOUND' })
  const cjs = (id: string) =>
    Object.assign(new Error(`Cannot find module '${id}'\nRequire stack:\n- /app/x.js`), { code: 'MODULE_NOT_FOUND' })

  it('names the package itself, by ESM or CommonJS, a subpath included', () => {
    assert.equal(isPackageNotFound(esm('mysql2'), 'mysql2'), true)
    assert.equal(isPackageNotFound(cjs('pg'), 'pg'), true)
    assert.equal(isPackageNotFound(cjs('mysql2/promise'), 'mysql2'), true)
  })

  it('not another package whose name starts the same, a file inside it, or another error', () => {
    assert.equal(isPackageNotFound(esm('pg-protocol'), 'pg'), false)
    assert.equal(isPackageNotFound(cjs('pg-protocol'), 'pg'), false)
    assert.equal(isPackageNotFound(new Error("Cannot find package 'pg'"), 'pg'), false)
    assert.equal(isPackageNotFound(undefined, 'pg'), false)
  })
})

describe('requireSqlDriver, with the drivers installed (as in this repository)', () => {
  it('loads each dialect’s driver without connecting', async () => {
    // Port 9 on 127.0.0.1 (discard) has no database: a connection attempt would fail, so none is made.
    await requireSqlDriver('postgresql://u:p@127.0.0.1:9/db')
    await requireSqlDriver('mysql://u:p@127.0.0.1:9/db')
    await requireSqlDriver('sqlite:///tsq-never-created.db')
  })

  it('leaves a URL it cannot read to the store, which says why on first use', async () => {
    await requireSqlDriver('oracle://u@h/db')
  })
})
