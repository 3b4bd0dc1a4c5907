// ESLint for tsq: typescript-eslint's recommended rules everywhere, and the
// layer order of src/ (LAYERS below) as errors.
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import js from '@eslint/js'
import { defineConfig } from 'eslint/config'
import { createNodeResolver, importX } from 'eslint-plugin-import-x'
import globals from 'globals'
import tseslint from 'typescript-eslint'

const ROOT = import.meta.dirname
const SRC = join(ROOT, 'src')

/**
 * The layers of src/, lowest first: a folder imports only folders on rows
 * below its own, and folders on one row are peers that do not import each
 * other. A new folder of src/ gets a row here (linting stops until it has one).
 * Why each folder sits where it does (docs/architecture.md has a paragraph per folder):
 * - tricks/ is the registry of the performance tricks and their switches (environment
 *   variables only), read by every layer that plays one.
 * - protocol/ is pure (no I/O); process/ (logger, pidfile, privileges, detach, idle
 *   trim) needs protocol/ only, beside transport/; so does cluster-state/ (the cluster as
 *   events tell it, no I/O), which `tsq events` (cli/) and the dashboard both read; so
 *   does logtool/ (worker logs read as a stream), for the error root; so does tracing/
 *   (OpenTelemetry through @opentelemetry/api), which client/ sends and app/ runs through.
 * - config/ reads settings and needs transport/'s settings types; locks/ (the lock
 *   stores) and admin/ (the broker verbs) need transport/ only.
 * - backends/ (result stores) read config/; client/ (send, control, events) reads
 *   config/ and backends/; app/ (what a task module imports, and the engine that runs
 *   a task) builds on all of those, locks/ included (app/execution/locked-run.ts).
 * - bus/ builds on the app (an events app is an app); worker/, beat/ and multi/ are
 *   peers above it; dashboard/ renders with cli/, as commands do; bundle/ (the CLI's
 *   one-file build) and index.ts (the package entry) sit above everything.
 */
export const LAYERS = [
  ['protocol', 'tricks'],
  ['transport', 'process', 'cluster-state', 'logtool', 'tracing'],
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

// Known debt: imports that still point up, each as an inline
// `eslint-disable-next-line import-x/no-restricted-paths -- <why>` at the import,
// so it is seen where it is; an unused one is an error (reportUnusedDisableDirectives).
// None today.

const entries = LAYERS.flat()
const unmapped = readdirSync(SRC).filter((name) => !entries.includes(name))
if (unmapped.length > 0) throw new Error(`eslint.config.js: give these entries of src/ a row in LAYERS: ${unmapped.join(', ')}`)

const isFile = (entry) => entry.endsWith('.ts')
/** Where an entry's own files are, as a glob for `target` and a path for `from`. */
const filesOf = (entry) => (isFile(entry) ? `src/${entry}` : `src/${entry}/**/*`)
const pathOf = (entry) => `src/${entry}`

// One zone per entry: nothing in it imports an entry on its own row or above.
const layerZones = LAYERS.flatMap((row, level) =>
  row.flatMap((entry) => {
    const above = LAYERS.slice(level)
      .flat()
      .filter((other) => other !== entry)
    if (above.length === 0) return []
    return [
      {
        target: filesOf(entry),
        from: above.map(pathOf),
        message: `Layers point down only: ${entry} (row ${level} of LAYERS in eslint.config.js) imports nothing on its row or above (${above.join(', ')}).`,
      },
    ]
  }),
)

// A folder with an index.ts is imported through it: files outside the folder
// reach nothing else in it. A folder gains this rule when it gains its index.
// A subfolder with an index.ts of its own is a second door, for a part that is
// loaded apart (transport/amqp/ and transport/redis/: a broker driver only the
// code that talks to that broker loads).
const doorsOf = (entry) => [
  './index.ts',
  ...readdirSync(join(SRC, entry), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(SRC, entry, d.name, 'index.ts')))
    .map((d) => `./${d.name}/index.ts`),
]
const indexZones = entries
  .filter((entry) => !isFile(entry) && existsSync(join(SRC, entry, 'index.ts')))
  .map((entry) => ({
    target: entries.filter((other) => other !== entry).map(filesOf),
    from: pathOf(entry),
    except: doorsOf(entry),
    message: `Import ${entry}/ through its index: '…/${entry}/index.js' (or ${doorsOf(entry).slice(1).join(', ') || 'no other door'}).`,
  }))

export default defineConfig(
  {
    ignores: ['dist/**', 'node_modules/**', 'bench/results/**', '.tsq-test/**', 'oclif.manifest.json'],
  },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    rules: {
      // `_name` marks a parameter or binding kept for its position or shape.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // `(...args: any[]) => unknown` is how a task or handler of any signature is typed:
      // unknown[] would refuse every function with typed parameters.
      '@typescript-eslint/no-explicit-any': ['error', { ignoreRestArgs: true }],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // Imports name the emitted .js; the source is the .ts beside it.
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'], extensionAlias: { '.js': ['.ts', '.js'] } })],
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { basePath: ROOT, zones: [...layerZones, ...indexZones] }],
      // The zones above see only imports the resolver finds: one it cannot find would pass unseen.
      'import-x/no-unresolved': ['error', { ignore: ['^[^.]'] }],
    },
  },
  {
    // protocol/ and cluster-state/ are pure functions: no module that does I/O. crypto is for uuid4 and
    // the auth serializer (keys passed in); module loads the msgpack and yaml codecs on first use.
    files: ['src/protocol/**/*.ts', 'src/cluster-state/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\.|node:crypto$|node:module$|@msgpack/msgpack$|yaml$)',
              message: 'protocol/ and cluster-state/ are pure: move what needs this module out of them',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/dashboard/web/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    // bin/ is CommonJS on purpose: V8's code cache (bin/code-cache.js) is offered to scripts, not to ES modules.
    files: ['**/*.cjs', 'bin/**/*.js'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
)
