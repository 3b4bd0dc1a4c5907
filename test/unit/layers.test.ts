// The layer map of docs/architecture.md, checked on every import in src/:
// arrows point down only, peers (same level, different folders) do not import
// each other, and a folder with a public surface (THROUGH_INDEX) is imported
// through its index.ts, never file by file.
//
// Why each folder sits where it does:
// - protocol/ and logtool/ are pure (no I/O); process/ (logger, pidfile,
//   privileges, detach, idle trim) needs protocol/ only, beside transport/;
//   so does cluster-state/ (the cluster as events tell it, no I/O), which
//   `tsq events` (cli/) and the dashboard both read.
// - config/ reads settings and needs transport/'s settings types; locks/ (the
//   lock stores) and admin/ (the broker verbs) need transport/ only.
// - backends/ (result stores) read config/; client/ (send, control, events)
//   reads config/ and backends/; app/ (what a task module imports, and the
//   engine that runs a task) builds on all of those, locks/ included: it takes
//   a task's lock where the task runs (app/execution/locked-run.ts).
// - bus/ builds on the app (an events app is an app); worker/, beat/ and
//   multi/ are peers above it; cli/ renders for the commands, dashboard/ with
//   cli/; commands/ is the top, bundle/ (the CLI's one-file build) and index.ts
//   (the package entry) above all.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src')

// Lowest first; a folder may import only folders on a lower line.
const ORDER: string[][] = [
  ['protocol', 'logtool'],
  ['transport', 'process', 'cluster-state'],
  ['config', 'locks', 'admin'],
  ['backends'],
  ['client'],
  ['app'],
  ['bus'],
  ['worker', 'beat', 'multi'],
  ['cli'],
  ['dashboard'],
  ['commands'],
  ['bundle'],
  ['index.ts'],
]
const LEVEL: Record<string, number> = Object.fromEntries(ORDER.flatMap((folders, level) => folders.map((f) => [f, level])))

// Imported from other folders through index.ts only. The rest (transport/'s
// inner files, cli/, bus/, worker/, dashboard/, admin/) are still reached file
// by file from above.
const THROUGH_INDEX = ['app', 'backends', 'beat', 'client', 'cluster-state', 'config', 'locks', 'logtool', 'multi', 'process', 'protocol']

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

/** Every import in src/ that leaves its own folder: the file, what it wrote, where that lands. */
function crossings(): Array<{ file: string; spec: string; from: string; to: string; target: string }> {
  const found = []
  for (const file of sources(SRC)) {
    const from = topOf(file)
    for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const target = resolve(dirname(file), match[1]!)
      const to = topOf(target)
      if (to !== from && !to.startsWith('..')) found.push({ file: relative(SRC, file), spec: match[1]!, from, to, target: relative(SRC, target) })
    }
  }
  return found
}

describe('layers (docs/architecture.md): imports point down only', () => {
  it('every top-level entry of src/ has a level', () => {
    const unmapped = readdirSync(SRC).filter((name) => !(name in LEVEL))
    assert.deepEqual(unmapped, [], `give these a level in test/unit/layers.test.ts: ${unmapped.join(', ')}`)
  })

  it('no file imports a layer above its own or a peer', () => {
    const wrong = crossings()
      .filter(({ from, to }) => LEVEL[from] === undefined || LEVEL[to] === undefined || LEVEL[to]! >= LEVEL[from]!)
      .map(({ file, spec, from, to }) => `${file} imports ${spec} (${from} → ${to})`)
    assert.deepEqual(wrong, [], 'imports that point up or sideways')
  })

  it('folders with a public surface are imported through their index.ts', () => {
    const wrong = crossings()
      .filter(({ to, target }) => THROUGH_INDEX.includes(to) && target !== `${to}/index.js`)
      .map(({ file, spec }) => `${file} imports ${spec}`)
    assert.deepEqual(wrong, [], 'import these through the folder\'s index.js')
  })

  it('protocol/ stays pure: no module that does I/O', () => {
    // crypto for uuid4 and the auth serializer's sign/verify (keys passed in); module to load the msgpack and yaml codecs on first use.
    const allowed = new Set(['node:crypto', 'node:module', '@msgpack/msgpack', 'yaml'])
    const wrong = sources(join(SRC, 'protocol')).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'".][^'"]*)['"]/g)]
        .map((m) => m[1]!)
        .filter((name) => !allowed.has(name))
        .map((name) => `${relative(SRC, file)} imports ${name}`),
    )
    assert.deepEqual(wrong, [], 'protocol/ is pure functions: move what needs these out of it')
  })

  it('cluster-state/ does no I/O: it imports no module, only protocol/', () => {
    const wrong = sources(join(SRC, 'cluster-state')).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'".][^'"]*)['"]/g)].map((m) => `${relative(SRC, file)} imports ${m[1]}`),
    )
    assert.deepEqual(wrong, [], 'cluster-state/ is fed events and read; what needs a module belongs above it')
  })

  it('sees a wrong import: the check is not empty', () => {
    const text = "import { x } from '../worker/worker.js'\nconst y = await import('../cli/render.js')\nexport * from './local.js'"
    const found = [...text.matchAll(SPECIFIER)].map((m) => m[1])
    assert.deepEqual(found, ['../worker/worker.js', '../cli/render.js', './local.js'])
  })
})
