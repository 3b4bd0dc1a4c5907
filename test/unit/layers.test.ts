// The layer map of DESIGN.md, checked on every import in src/: arrows point
// down only, and peers (same level, different folders) do not import each other.
//
// Where DESIGN.md leaves a folder's level open, the map below fixes it from
// what the folder needs:
// - locks/ sits under app/: the app takes a task's `once` lock when it sends
//   (celery-once's QueueOnce does it in apply_async), and eager mode runs a
//   locked task as the worker does. locks/ itself needs only transport/.
// - admin/ (the broker verbs of `amqp`, `list bindings`, `migrate`) needs only
//   transport/ and protocol/, so it is a peer of locks/.
// - bus/ builds on the app (an events app is an app); the worker runs it.
// - dashboard/ renders with cli/, as commands do; commands/ is the top, and
//   bundle/ (the CLI's one-file build) and index.ts (the package entry) sit above all.
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
  locks: 2,
  admin: 2,
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
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g

describe('layers (DESIGN.md): imports point down only', () => {
  it('every top-level entry of src/ has a level', () => {
    const unmapped = readdirSync(SRC).filter((name) => !(name in LEVEL))
    assert.deepEqual(unmapped, [], `give these a level in test/unit/layers.test.ts: ${unmapped.join(', ')}`)
  })

  it('no file imports a layer above its own or a peer', () => {
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
    assert.deepEqual(wrong, [])
  })

  it('sees a wrong import: the check is not empty', () => {
    const text = "import { x } from '../worker/worker.js'\nconst y = await import('../cli/render.js')\nexport * from './local.js'"
    const found = [...text.matchAll(SPECIFIER)].map((m) => m[1])
    assert.deepEqual(found, ['../worker/worker.js', '../cli/render.js', './local.js'])
  })
})
