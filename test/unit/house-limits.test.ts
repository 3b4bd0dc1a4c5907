// The house limits of src/: no source file (*.ts, *.js) over 600 lines, and no
// folder (src/ itself included) holding more than 20 files at its top level
// (sub-folders do not count). A file or folder past a limit fails here, named
// with its count, so it is split or grouped before it grows further.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const SRC = join(ROOT, 'src')
const MAX_LINES = 600
const MAX_FILES = 20

/** Every folder under src/ (src/ first), with the files at its top level. */
function folders(dir = SRC): Array<{ dir: string; files: string[] }> {
  const entries = readdirSync(dir, { withFileTypes: true })
  const here = { dir, files: entries.filter((e) => e.isFile()).map((e) => join(dir, e.name)) }
  return [here, ...entries.filter((e) => e.isDirectory()).flatMap((e) => folders(join(dir, e.name)))]
}

/** Lines as `wc -l` counts them: the newlines, plus a last line without one. */
function lineCount(path: string): number {
  const text = readFileSync(path, 'utf8')
  const newlines = text.split('\n').length - 1
  return text.length > 0 && !text.endsWith('\n') ? newlines + 1 : newlines
}

const tree = folders()
const rel = (path: string): string => relative(ROOT, path).split('\\').join('/')

describe(`house limits: src/ files at most ${MAX_LINES} lines, folders at most ${MAX_FILES} files`, () => {
  it('finds the source files it measures', () => {
    const sources = tree.flatMap((f) => f.files).filter((p) => /\.(ts|js)$/.test(p))
    assert.ok(sources.length > 100, `only ${sources.length} source files found under ${SRC}`)
  })

  it(`no *.ts or *.js file under src/ is over ${MAX_LINES} lines`, () => {
    const over: string[] = []
    for (const path of tree.flatMap((f) => f.files).filter((p) => /\.(ts|js)$/.test(p))) {
      const lines = lineCount(path)
      if (lines > MAX_LINES) over.push(`${rel(path)}: ${lines} lines`)
    }
    assert.deepEqual(over, [], `files over ${MAX_LINES} lines: split them by idea`)
  })

  it(`no folder under src/ holds more than ${MAX_FILES} files at its top level`, () => {
    const crowded = tree.filter((f) => f.files.length > MAX_FILES).map((f) => `${rel(f.dir)}: ${f.files.length} files`)
    assert.deepEqual(crowded, [], `folders over ${MAX_FILES} files: group related files into a sub-folder`)
  })
})
