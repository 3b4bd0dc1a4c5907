// A task module that does not load says where: the file, line and column of
// the mistake and the source around it, under the one-line error (exit 64).
// An ES module's syntax error carries no place in Node's message, so tsq finds
// it, in the app module or in a module it imports; a TypeScript module's is
// esbuild's, which tsx leaves in its message's later lines; an error thrown
// while the module runs points at the user's line that threw.
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { embeddedBrokerEnv, runTsq, tempTsqHome } from '../helpers/cli.js'

describe('a task module that does not load', () => {
  const home = tempTsqHome()
  const env = embeddedBrokerEnv(home)
  const dir = join(home, 'proj')
  mkdirSync(dir)
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  const write = (name: string, text: string): string => {
    writeFileSync(join(dir, name), text)
    return join(dir, name)
  }

  it('an .mjs syntax error: file, line and column, and the lines up to it', async () => {
    const file = write('tasks.mjs', '// tasks\nexport const app = null\nconst add = (x, y) => x + y)\nexport { add }\n')
    const r = await runTsq(['worker', '-A', file, '-P', 'solo'], { env })
    assert.equal(r.code, 64, r.stderr)
    assert.equal(
      r.stderr,
      [
        `Error: cannot load ${file}: SyntaxError: Unexpected token ')' at ${file}:3:28`,
        '  1 | // tasks',
        '  2 | export const app = null',
        '> 3 | const add = (x, y) => x + y)',
        '    |                            ^',
        '',
      ].join('\n'),
    )
  })

  it('a syntax error in a module the app imports names that module, not the app', async () => {
    const helper = write('helper.mjs', 'export function double(x) {\n  return x * 2\n}}\n')
    const file = write('app.mjs', "import { double } from './helper.mjs'\nexport const app = double\n")
    const r = await runTsq(['worker', '-A', file, '-P', 'solo'], { env })
    assert.equal(r.code, 64, r.stderr)
    assert.equal(r.stderr.split('\n')[0], `Error: cannot load ${file}: SyntaxError: Unexpected token '}' at ${helper}:3:2`)
    assert.match(r.stderr, /^> 3 \| \}\}\n {4}\| {2}\^$/m)
  })

  it("a .ts syntax error: esbuild's message with its place, columns counted from 1", async () => {
    const file = write('tasks.ts', 'export const app = null\n\nfunction add(x: number, y: number): number {\n  return (x + y\n}\n')
    const r = await runTsq(['worker', '-A', file, '-P', 'solo'], { env })
    assert.equal(r.code, 64, r.stderr)
    assert.equal(
      r.stderr,
      [
        `Error: cannot load ${file}: Expected ")" but found "}" at ${file}:5:1`,
        '  3 | function add(x: number, y: number): number {',
        '  4 |   return (x + y',
        '> 5 | }',
        '    | ^',
        '',
      ].join('\n'),
    )
  })

  it('an error thrown while the module runs points at the line that threw; --json gives the place', async () => {
    const file = write('throws.mjs', 'export const app = null\nconst settings = undefined\nexport const url = settings.broker\n')
    const r = await runTsq(['inspect', 'ping', '-A', file, '--json'], { env })
    assert.equal(r.code, 64, r.stderr)
    const lines = r.stderr.split('\n')
    assert.equal(lines[0], `Error: cannot load ${file}: TypeError: Cannot read properties of undefined (reading 'broker') at ${file}:3:29`)
    assert.equal(lines[3], '> 3 | export const url = settings.broker')
    const doc = JSON.parse(r.stdout) as { error: { code: string; location: unknown; exitCode: number } }
    assert.deepEqual(doc.error.location, { file, line: 3, column: 29 })
    assert.equal(doc.error.exitCode, 64)
  })

  it('a module that is not there stays one line', async () => {
    const r = await runTsq(['worker', '-A', join(dir, 'nowhere.js'), '-P', 'solo'], { env })
    assert.equal(r.code, 64, r.stderr)
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
  })
})
