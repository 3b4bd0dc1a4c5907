// Where a task module that failed to load went wrong: the file, line and
// column, and a few lines of its source. Node 20 gives none of them for an ES
// module's syntax error (its message is V8's alone), and tsx puts esbuild's
// `file:line:col: ERROR: text` in the lines after the first of its message.
// Only the error path runs this: a module that loads costs nothing.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export interface SourceLocation {
  file: string
  /** 1-based. */
  line: number
  /** 1-based, as editors count. */
  column: number
}

export interface LoadFailure {
  /** What went wrong, in one line (without the location). */
  reason: string
  location?: SourceLocation
  /** The source around the location, and for esbuild the further errors: printed under the one line. */
  detail?: string
}

/** How long a look at the source may take before the error is reported without it. */
const CHECK_TIMEOUT_MS = 10_000

/** Why `modulePath` (or a module it imports) did not load, with where, when that can be found. */
export function describeLoadFailure(modulePath: string, error: unknown): LoadFailure {
  const message = error instanceof Error ? error.message : String(error)
  const esbuild = esbuildErrors(message)
  if (esbuild.length > 0) {
    const [first, ...rest] = esbuild
    const frame = codeFrameOf(first!.location)
    const more = rest.map((e) => `  also ${formatLocation(e.location)}: ${e.text}`)
    return { reason: first!.text, location: first!.location, detail: joinDetail(frame, ...more) }
  }
  const reason = message.split('\n')[0]!
  const name = error instanceof Error ? error.name : ''
  const prefix = name && name !== 'Error' ? `${name}: ` : ''
  const location =
    name === 'SyntaxError'
      ? (arrowLocation(error) ?? locateSyntaxError(modulePath))
      : stackLocation(error instanceof Error ? error.stack : undefined)
  if (!location) return { reason: `${prefix}${reason}` }
  return { reason: `${prefix}${reason}`, location, detail: codeFrameOf(location) }
}

export function formatLocation(location: SourceLocation): string {
  return `${location.file}:${location.line}:${location.column}`
}

/** esbuild's lines in tsx's message: `/path/tt.ts:5:0: ERROR: Expected ")" but found end of file` (column 0-based). */
function esbuildErrors(message: string): Array<{ location: SourceLocation; text: string }> {
  if (!/^Transform failed with \d+ errors?:/.test(message)) return []
  const errors: Array<{ location: SourceLocation; text: string }> = []
  for (const line of message.split('\n').slice(1)) {
    const m = /^(.+):(\d+):(\d+): ERROR: (.*)$/.exec(line)
    if (m) errors.push({ location: { file: m[1]!, line: Number(m[2]), column: Number(m[3]) + 1 }, text: m[4]! })
  }
  return errors
}

/**
 * Node's own decoration of a CommonJS syntax error (and of `node --check`'s):
 * `path:line`, the source line, then a caret under the column.
 */
function arrowLocation(error: unknown): SourceLocation | undefined {
  const stack = error instanceof Error ? error.stack : undefined
  return stack ? parseArrow(stack) : undefined
}

function parseArrow(text: string): SourceLocation | undefined {
  const m = /^(?:file:\/\/)?(\/[^\n]*?|[A-Za-z]:\\[^\n]*?):(\d+)\n([^\n]*)\n([^\n]*)/.exec(text)
  if (!m) return undefined
  const file = m[0].startsWith('file://') ? fileURLToPath(`file://${m[1]}`) : m[1]!
  const caret = m[4]!.indexOf('^')
  return { file, line: Number(m[2]), column: caret === -1 ? 1 : caret + 1 }
}

/**
 * An ES module's syntax error, which Node reports without a place, nor even a
 * file when it is in a module the app imports: a child Node parses the
 * module graph from the app down (relative imports), as V8 parses it, and
 * `node --check` then says where in the first module that does not parse.
 */
function locateSyntaxError(modulePath: string): SourceLocation | undefined {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  const walk = spawnSync(
    process.execPath,
    ['--experimental-vm-modules', '--no-warnings', '--input-type=module', '-e', GRAPH_WALK, modulePath],
    {
      encoding: 'utf8',
      timeout: CHECK_TIMEOUT_MS,
      env,
    },
  )
  const file = walk.status === 0 ? walk.stdout.trim() : ''
  if (!file) return undefined
  const check = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: CHECK_TIMEOUT_MS, env })
  return check.status === 0 ? undefined : parseArrow(check.stderr)
}

/**
 * Run by a child Node with vm modules on: the first file from the entry down
 * (relative imports, in source order) that V8 will not compile, printed; nothing
 * when every one compiles. TypeScript and packages are not followed: tsx
 * reports the first, and a package is not the user's to fix.
 */
const GRAPH_WALK = `
import vm from 'node:vm'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
const typeOf = (dir) => {
  for (;;) {
    try { return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).type ?? 'commonjs' } catch {}
    const up = dirname(dir)
    if (up === dir) return 'commonjs'
    dir = up
  }
}
const seen = new Set()
const queue = [process.argv[1]]
while (queue.length) {
  const file = queue.shift()
  if (seen.has(file) || !existsSync(file)) continue
  seen.add(file)
  if (!/\\.(mjs|cjs|js)$/.test(file)) continue
  const source = readFileSync(file, 'utf8')
  const esm = file.endsWith('.mjs') || (file.endsWith('.js') && typeOf(dirname(file)) === 'module')
  try {
    if (!esm) { vm.compileFunction(source, ['exports', 'require', 'module', '__filename', '__dirname'], { filename: file }); continue }
    const mod = new vm.SourceTextModule(source, { identifier: pathToFileURL(file).href })
    for (const spec of mod.dependencySpecifiers) {
      if (!/^(\\.{1,2}\\/|\\/|file:)/.test(spec)) continue
      queue.push(fileURLToPath(new URL(spec, pathToFileURL(file))))
    }
  } catch (error) {
    if (error && error.name === 'SyntaxError') { process.stdout.write(file); break }
  }
}
`

/**
 * The first frame of a stack in the user's own files: not Node's, nor a
 * package's, nor tsq's (an error tsq raised, as createApp refusing a setting,
 * points at the user's line that called it).
 */
function stackLocation(stack: string | undefined): SourceLocation | undefined {
  if (!stack) return undefined
  for (const m of stack.matchAll(/^\s+at (?:async )?(?:.* \()?((?:file:\/\/)?\/[^\s():]+):(\d+):(\d+)\)?$/gm)) {
    const file = m[1]!.startsWith('file://') ? fileURLToPath(m[1]!) : m[1]!
    if (file.includes('/node_modules/') || TSQ_CODE.some((dir) => file.startsWith(dir))) continue
    return { file, line: Number(m[2]), column: Number(m[3]) }
  }
  return undefined
}

/**
 * tsq's own code: the folders holding this file, compiled or bundled (dist/)
 * or run from its sources (src/). Read off a stack, since the CommonJS fast
 * bundle has no import.meta.
 */
const TSQ_CODE: readonly string[] = (() => {
  const here = /((?:file:\/\/)?\/[^\s():]+):\d+:\d+\)?$/.exec(new Error().stack?.split('\n')[1] ?? '')
  if (!here) return []
  const file = here[1]!.startsWith('file://') ? fileURLToPath(here[1]!) : here[1]!
  const m = /^(.*)\/(dist|src)\//.exec(file)
  return m ? [`${m[1]}/dist/`, `${m[1]}/src/`] : []
})()

/** Up to two lines before the location, its line, and a caret under the column; undefined when the file cannot be read. */
export function codeFrameOf(location: SourceLocation): string | undefined {
  let source: string
  try {
    source = readFileSync(location.file, 'utf8')
  } catch {
    return undefined
  }
  return codeFrame(source, location.line, location.column)
}

export function codeFrame(source: string, line: number, column: number): string {
  const lines = source.split(/\r?\n/)
  const first = Math.max(1, line - 2)
  const last = Math.min(lines.length, line)
  const width = String(line).length
  const out: string[] = []
  for (let n = first; n <= last; n++) {
    const text = lines[n - 1] ?? ''
    out.push(`${n === line ? '>' : ' '} ${String(n).padStart(width)} | ${text}`)
  }
  const text = lines[line - 1] ?? ''
  // Tabs kept under tabs, so the caret lines up as the terminal shows the line.
  const pad = text.slice(0, Math.max(0, column - 1)).replace(/[^\t]/g, ' ')
  out.push(`  ${' '.repeat(width)} | ${pad}^`)
  return out.join('\n')
}

function joinDetail(...parts: Array<string | undefined>): string | undefined {
  const kept = parts.filter((p): p is string => p !== undefined && p !== '')
  return kept.length ? kept.join('\n') : undefined
}
