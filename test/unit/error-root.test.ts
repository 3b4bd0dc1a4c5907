// Every error class tsq defines descends from TsqError, and every code its
// errors carry has a row in the one table from code to exit status
// (protocol/errors.ts): the classes are found by reading src/, each exported
// one is loaded and made, and the codes given where errors are thrown are read
// from the source.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { exitCodeOfCode, isTsqError, TsqError } from '../../src/protocol/index.js'

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src')
const BUILT_IN_ERRORS = new Set([
  'Error',
  'TypeError',
  'RangeError',
  'SyntaxError',
  'ReferenceError',
  'EvalError',
  'URIError',
  'AggregateError',
])
/** Arguments a class needs to be made, where three strings will not do. */
const SAMPLE_ARGS: Record<string, unknown[]> = { SendManyError: [[]] }
/** Its codes are the broker's own (NOT_FOUND, WRONGTYPE, ...): any one not in the table exits 1 (transport/errors.ts). */
const BROKER_CODED = 'BrokerRequestError'

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* sourceFiles(path)
    else if (entry.name.endsWith('.ts')) yield path
  }
}

interface ClassDecl {
  name: string
  base: string
  file: string
  exported: boolean
}

/** Each source file, without its block comments and comment lines (a doc comment's example is not code). */
const sources = [...sourceFiles(SRC)].map((file) => ({
  file,
  text: readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, ''),
}))

const classes: ClassDecl[] = sources.flatMap(({ file, text }) =>
  [...text.matchAll(/(export\s+)?class\s+(\w+)(?:<[^{]*?>)?\s+extends\s+(codedError\(\s*'[A-Z_]+'(?:\s*,\s*(\w+))?\s*\)|[\w.]+)/g)].map(
    (m) => ({ name: m[2]!, base: m[3]!.startsWith('codedError(') ? (m[4] ?? 'TsqError') : m[3]!, file, exported: m[1] !== undefined }),
  ),
)
const byName = new Map<string, ClassDecl[]>()
for (const c of classes) byName.set(c.name, [...(byName.get(c.name) ?? []), c])

/** The names a class descends through, up to the first that src/ does not declare. */
function chainOf(c: ClassDecl): string[] {
  const chain = [c.name]
  let base = c.base
  while (!chain.includes(base)) {
    chain.push(base)
    const next = byName.get(base)
    if (!next || next.length !== 1) break
    base = next[0]!.base
  }
  return chain
}

const errorClasses = classes.filter((c) => {
  const chain = chainOf(c)
  return chain.includes('TsqError') || BUILT_IN_ERRORS.has(chain.at(-1)!)
})

/** The text between the parenthesis at `open` and the one that closes it. */
function argumentsAt(text: string, open: number): string {
  let depth = 0
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth += 1
    else if (text[i] === ')' && --depth === 0) return text.slice(open + 1, i)
  }
  return text.slice(open + 1)
}

const where = (c: ClassDecl) => `${c.name} (${relative(SRC, c.file)})`

describe('one error root: TsqError', () => {
  it('finds the error classes (a reading of src/ that stopped seeing them would pass anything)', () => {
    for (const name of ['TsqError', 'LockedError', 'Reject', 'HttpError', 'LogFileError', 'WorkerSettingError', 'UsageError'])
      assert.ok(
        errorClasses.some((c) => c.name === name),
        name,
      )
    assert.ok(errorClasses.length > 60, String(errorClasses.length))
  })

  it('every error class descends from TsqError; only TsqError extends a built-in error', () => {
    for (const c of errorClasses) {
      if (c.name === 'TsqError') continue
      assert.ok(chainOf(c).includes('TsqError'), `${where(c)} extends ${chainOf(c).slice(1).join(' < ')}`)
    }
  })

  it('an error class name is declared once (it is the error name, and what the chain above reads)', () => {
    for (const c of errorClasses) assert.equal(byName.get(c.name)!.length, 1, `${c.name}: ${byName.get(c.name)!.map(where).join(', ')}`)
  })

  it('each exported error class, made, is a TsqError whose code the table maps (or takes its code from the thrower)', async () => {
    const callerCoded: string[] = []
    let made = 0
    for (const file of new Set(errorClasses.filter((c) => c.exported).map((c) => c.file))) {
      const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>
      for (const [name, value] of Object.entries(module)) {
        if (typeof value !== 'function' || !(value.prototype instanceof Error)) continue
        assert.ok(value === TsqError || value.prototype instanceof TsqError, `${name} (${relative(SRC, file)}) is not a TsqError`)
        const error = new (value as new (...args: unknown[]) => TsqError)(...(SAMPLE_ARGS[name] ?? ['x', 'x', 'x']))
        made += 1
        assert.ok(isTsqError(error), name)
        if (error.code === 'x') {
          callerCoded.push(name)
          continue
        }
        assert.notEqual(exitCodeOfCode(error.code), undefined, `${name}'s code ${error.code} has no row in protocol/errors.ts's table`)
        assert.equal(error.exitCode, exitCodeOfCode(error.code), name)
      }
    }
    assert.ok(made > 60, String(made))
    // The layers' bases, and the few whose throwers pick among codes: the next case reads those codes.
    assert.deepEqual(callerCoded.sort(), [
      'BindingsError',
      BROKER_CODED,
      'BusError',
      'CliError',
      'MultiError',
      'PrivilegeError',
      'ProtocolError',
      'TsqError',
      'TsqTransportError',
    ])
  })

  it('every code written where an error is made is in the table (but a broker refusal, which carries the broker code)', () => {
    // The code is the first argument of these, the last of PrivilegeError's.
    const given = /\bnew (TsqError|ProtocolError|TsqTransportError|CliError|MultiError|BusError|BindingsError|PrivilegeError)\(/g
    const found: string[] = []
    for (const { file, text } of sources) {
      const codes = [...text.matchAll(/(?:super|codedError)\(\s*'([A-Z][A-Z_]+)'|\bcode(?::\s*string)?\s*=\s*'([A-Z][A-Z_]+)'/g)].map(
        (m) => m[1] ?? m[2]!,
      )
      for (const m of text.matchAll(given)) {
        const args = argumentsAt(text, m.index + m[0].length - 1)
        const code = (m[1] === 'PrivilegeError' ? /,\s*'([A-Z][A-Z_]+)'\s*,?\s*$/ : /^\s*'([A-Z][A-Z_]+)'/).exec(args)?.[1]
        if (code) codes.push(code)
      }
      for (const code of codes) {
        found.push(code)
        assert.notEqual(exitCodeOfCode(code), undefined, `${relative(SRC, file)}: code ${code} has no row in protocol/errors.ts's table`)
      }
    }
    for (const code of ['CONFIG', 'RETRY', 'LOCKED', 'PERMISSION', 'BROKER_UNREACHABLE', 'TASK_FAILED'])
      assert.ok(found.includes(code), code)
  })
})
