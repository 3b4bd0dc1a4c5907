// Loads a user's task module (`-A ./tasks.js`) and finds its app: the export
// named `app`, else the default export. TypeScript modules load through tsx.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { App } from './app.js'
import { urlListSetting } from '../transport/index.js'
import { TsqError } from '../protocol/index.js'
import { describeLoadFailure, formatLocation, type SourceLocation } from './load-error.js'

export class AppLoadError extends TsqError {
  /** Where the module went wrong, when that is known (a syntax error, the line that threw). */
  readonly location?: SourceLocation
  /** The source around it, printed under the one-line error. */
  readonly detail?: string
  constructor(message: string, options?: { cause?: unknown; location?: SourceLocation; detail?: string }) {
    super('CONFIG', message, options)
    if (options?.location) this.location = options.location
    if (options?.detail) this.detail = options.detail
  }
}

const EXTENSIONS = ['', '.js', '.mjs', '.ts', '.mts', '/index.js', '/index.ts']

export function resolveAppModule(spec: string, cwd = process.cwd(), what = 'the app module'): string {
  const base = isAbsolute(spec) ? spec : resolve(cwd, spec)
  for (const ext of EXTENSIONS) {
    const candidate = base + ext
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate
  }
  throw new AppLoadError(`cannot find ${what} ${JSON.stringify(spec)} (looked for ${EXTENSIONS.map((e) => `${spec}${e}`).join(', ')})`)
}

/** `-I/--include`: more modules to import after the app's, resolved as -A is. */
export function resolveIncludes(specs: readonly string[], cwd = process.cwd()): string[] {
  return specs.map((spec) => resolveAppModule(spec, cwd, 'the included module'))
}

export function isTypeScript(path: string): boolean {
  return /\.(ts|mts|cts)$/.test(path)
}

/** The `--import` argument that lets a child process load TypeScript. */
export function tsxImportUrl(): string {
  return import.meta.resolve('tsx')
}

let tsxRegistered = false

function looksLikeApp(value: unknown): value is App {
  return !!value && typeof value === 'object' && (value as App).tasks instanceof Map && typeof (value as App).task === 'function'
}

/** Registers tsx's loader when `modulePath` needs it: what importing it does first, done ahead (a spare --watch worker). */
export async function prepareToImport(modulePath: string): Promise<void> {
  if (isTypeScript(modulePath) && !tsxRegistered) {
    const { register } = await import('tsx/esm/api')
    register()
    tsxRegistered = true
  }
}

async function importModule(modulePath: string): Promise<Record<string, unknown>> {
  await prepareToImport(modulePath)
  try {
    return (await import(pathToFileURL(modulePath).href)) as Record<string, unknown>
  } catch (error) {
    const failure = describeLoadFailure(modulePath, error)
    const at = failure.location ? ` at ${formatLocation(failure.location)}` : ''
    throw new AppLoadError(`cannot load ${modulePath}: ${failure.reason}${at}${commonJsHint(modulePath)}`, {
      cause: error,
      location: failure.location,
      detail: failure.detail,
    })
  }
}

/**
 * A `.ts` file outside a package with "type": "module" loads as CommonJS, and
 * Node's own message for what then fails (a require() cycle) does not say so.
 */
function commonJsHint(modulePath: string): string {
  if (!/\.(ts|cts)$/.test(modulePath) || nearestPackageType(dirname(modulePath)) === 'module') return ''
  return ' (a .ts file outside a package with "type": "module" loads as CommonJS; task modules are ES modules: add "type": "module" to package.json, or name the file .mts)'
}

function nearestPackageType(dir: string): string | undefined {
  const packageDir = nearestPackageDir(dir)
  if (packageDir === undefined) return undefined
  try {
    return (JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { type?: string }).type ?? 'commonjs'
  } catch {
    return undefined
  }
}

/** The nearest folder from `dir` upwards that holds a package.json. */
export function nearestPackageDir(dir: string): string | undefined {
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir
    const up = dirname(dir)
    if (up === dir) return undefined
    dir = up
  }
}

/**
 * The app module, then each included one. An included module registers its
 * tasks by importing the app module itself (`import { app } from './tasks.js'`),
 * which ES modules resolve to the instance loaded here, as Celery's `-I`
 * modules import the app.
 */
export async function loadApp(modulePath: string, includePaths: readonly string[] = []): Promise<App> {
  const mod = await importModule(modulePath)
  const app = looksLikeApp(mod.app) ? mod.app : looksLikeApp(mod.default) ? mod.default : undefined
  if (!app) throw new AppLoadError(`${modulePath} exports no app: export it as \`app\` (or default) from createApp()`)
  applyConfigModule(app, await loadConfigModule())
  for (const includePath of includePaths) await importModule(includePath)
  return app
}

/**
 * Where `--config` leaves its module for every process of the run (pool
 * processes load the app again), as Celery's --config sets
 * CELERY_CONFIG_MODULE: an absolute path once the CLI has resolved it.
 */
export const CONFIG_MODULE_ENV = 'TSQ_CONFIG_MODULE'

export type ConfigSettings = Record<string, unknown>

const configModules = new Map<string, Promise<ConfigSettings>>()

/**
 * The settings of the config module `$TSQ_CONFIG_MODULE` names (`--config`),
 * or {} when none is set: Celery's settings by their Python names (broker_url,
 * result_backend, task_routes, task_default_queue, broker_transport_options,
 * ...), as the module's default export or its named exports (a .json file: its
 * object). The path resolves as -A does.
 */
export function loadConfigModule(env: NodeJS.ProcessEnv = process.env): Promise<ConfigSettings> {
  const spec = env[CONFIG_MODULE_ENV]
  if (!spec) return Promise.resolve({})
  const path = resolveAppModule(spec, process.cwd(), 'the config module')
  let settings = configModules.get(path)
  if (!settings) configModules.set(path, (settings = readConfigModule(path)))
  return settings
}

async function readConfigModule(path: string): Promise<ConfigSettings> {
  let value: unknown
  if (path.endsWith('.json')) {
    try {
      value = JSON.parse(readFileSync(path, 'utf8'))
    } catch (error) {
      throw new AppLoadError(`cannot load the config module ${path}: ${(error as Error).message}`, { cause: error })
    }
  } else {
    const mod = await importModule(path)
    const { default: byDefault, ...named } = mod
    value = byDefault !== undefined && Object.keys(named).length === 0 ? byDefault : named
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new AppLoadError(`the config module ${path} holds no settings object`)
  return value as ConfigSettings
}

function stringSetting(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** The config module's broker and result backend, as loadConfig's app layer takes them. */
export function configModuleUrls(settings: ConfigSettings): {
  appBroker?: string
  appResultBackend?: string
  appBrokerRead?: string
  appBrokerWrite?: string
} {
  return {
    appBroker: urlListSetting(settings.broker_url),
    appResultBackend: stringSetting(settings.result_backend),
    appBrokerRead: stringSetting(settings.broker_read_url),
    appBrokerWrite: stringSetting(settings.broker_write_url),
  }
}

/**
 * The config module under what the app says itself, as Celery's config
 * module sits under the app's own settings: createApp's broker, resultBackend,
 * defaultQueue and conf win; the module fills in what they leave out. Tasks
 * take their task_* defaults when they are registered, before this runs: put
 * those in the app's conf.
 */
function applyConfigModule(app: App, settings: ConfigSettings): void {
  if (Object.keys(settings).length === 0) return
  const options = app.options
  const urls = configModuleUrls(settings)
  options.broker ??= urls.appBroker
  options.resultBackend ??= urls.appResultBackend
  options.defaultQueue ||= stringSetting(settings.task_default_queue)
  options.beatSchedule ??= settings.beat_schedule as Record<string, unknown> | undefined
  options.conf = { ...settings, ...options.conf }
}

/**
 * Loads tsq's package entry (dist/index.js), which a task module imports as
 * `tsq`: a spare --watch worker does it ahead, so the module's load finds it
 * loaded. Nothing when tsq runs from its sources.
 */
export async function preloadPackageEntry(): Promise<void> {
  if (import.meta.url.endsWith('.ts')) return
  const root = nearestPackageDir(dirname(fileURLToPath(import.meta.url)))
  if (root !== undefined) await import(pathToFileURL(join(root, 'dist', 'index.js')).href)
}

/**
 * The module of the default app (default-app.ts), for `tsq worker` without -A:
 * the compiled file under dist/app, or the source when tsq runs from src/.
 */
export function defaultAppModulePath(): string {
  if (import.meta.url.endsWith('.ts')) return fileURLToPath(new URL('./default-app.ts', import.meta.url))
  const root = nearestPackageDir(dirname(fileURLToPath(import.meta.url)))
  if (root === undefined) throw new AppLoadError('cannot find the tsq package root for the default app')
  return join(root, 'dist', 'app', 'default-app.js')
}
