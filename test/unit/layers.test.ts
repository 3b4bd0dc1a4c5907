// The layer map of DESIGN.md, checked on every import in src/: arrows point
// down only, and peers (same level, different folders) do not import each other.
//
// Where DESIGN.md leaves a folder's level open, the map below fixes it from
// what the folder needs:
// - locks/ is one of the capabilities above app/ (DESIGN.md: the worker calls
//   it around a run); it needs transport/ for its stores and app/ for the
//   option types and the run it wraps. The app's lock and once options and
//   app.lock() reach it through hooks in app/lock-hooks.ts, which locks/index.ts
//   fills when the package entry, the worker or a pool slot loads it.
// - admin/ (the broker verbs of `amqp`, `list bindings`, `migrate`) needs only
//   transport/ and protocol/.
// - bus/ builds on the app (an events app is an app); the worker runs it.
// - dashboard/ renders with cli/, as commands do; commands/ is the top, and
//   bundle/ (the CLI's one-file build) and index.ts (the package entry) sit above all.
//
// KNOWN_UPWARD lists the imports that still point up, so that no new one can
// join them unseen. Empty: the app → locks imports it held are mended (above).
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src')

const LEVEL: Record<string, number> = {
  protocol: 0,
  logtool: 0,
  transport: 1,
  admin: 2,
  locks: 4,
  app: 3,
  bus: 4,
  worker: 5,
  beat: 5,
  multi: 5,
  cli: 6,
  dashboard: 7,
  commands: 8,
  bundle: 9,
  'index.ts': 10,
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === 'web' ? [] : sources(path)
    return /\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })
}

/** The top-level entry of src/ a path falls in: its folder, or the file itself at the top. */
const topOf = (path: string): string => relative(SRC, path).split(sep)[0]!

// Static imports and re-exports (`from '…'`, `import '…'`) and dynamic `import('…')`.
const KNOWN_UPWARD: string[] = []

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g

describe('layers (DESIGN.md): imports point down only', () => {
  it('every top-level entry of src/ has a level', () => {
    const unmapped = readdirSync(SRC).filter((name) => !(name in LEVEL))
    assert.deepEqual(unmapped, [], `give these a level in test/unit/layers.test.ts: ${unmapped.join(', ')}`)
  })

  it('no file imports a layer above its own or a peer, but for KNOWN_UPWARD', () => {
    const wrong: string[] = []
    for (const file of sources(SRC)) {
      const from = topOf(file)
      for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
        const to = topOf(resolve(dirname(file), match[1]!))
        if (to === from || to.startsWith('..')) continue
        const [a, b] = [LEVEL[from], LEVEL[to]]
        if (a === undefined || b === undefined || b >= a) wrong.push(`${relative(SRC, file)} imports ${match[1]} (${from} → ${to})`)
      }
    }
    assert.deepEqual(wrong.filter((w) => !KNOWN_UPWARD.includes(w)), [], 'imports that point up or sideways')
    // A mended one leaves the list, so the list stays the debt there is.
    assert.deepEqual(KNOWN_UPWARD.filter((k) => !wrong.includes(k)), [], 'no longer found: take them off KNOWN_UPWARD')
  })

  it('sees a wrong import: the check is not empty', () => {
    const text = "import { x } from '../worker/worker.js'\nconst y = await import('../cli/render.js')\nexport * from './local.js'"
    const found = [...text.matchAll(SPECIFIER)].map((m) => m[1])
    assert.deepEqual(found, ['../worker/worker.js', '../cli/render.js', './local.js'])
  })
})
