// tsq as a project installs it: `npm pack` of the built tree holds only what
// runs, `npm install ./tsq-*.tgz` into an empty project compiles nothing and
// leaves the SQL drivers out, and then, in that project, `npx tsq --version`
// answers, a TypeScript task module and a script importing 'tsq' by name
// typecheck against the package's declarations, `tsq worker -A tasks.ts` (the
// launcher in node_modules/.bin) runs on the embedded broker the task the
// script sends, and a db+ backend without its driver is one line naming the
// package to install. One pack and one install, shared by every test.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ROOT } from '../helpers/cli.js'

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
/** Packages of a default install allowed an install script: each only checks a prebuilt binary that came with it. */
const INSTALL_SCRIPTS_ALLOWED = new Set(['esbuild'])
const DRIVERS = ['pg', 'mysql2', 'better-sqlite3']

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * The environment of a shell in the new project: no npm_* variables of the
 * `npm test` this may run under (they would steer the child npm), and no
 * broker, backend or config module from the caller.
 */
function projectEnv(home: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && key !== 'NODE_TEST_CONTEXT'))
  return {
    ...env,
    TSQ_HOME: home,
    TSQ_BROKER_URL: '',
    CELERY_BROKER_URL: '',
    TSQ_RESULT_BACKEND: '',
    CELERY_RESULT_BACKEND: '',
    TSQ_CONFIG_MODULE: '',
    NO_COLOR: '1',
    npm_config_update_notifier: 'false',
    ...extra,
  }
}

function run(cmd: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${cmd} ${args.join(' ')} took over ${options.timeoutMs} ms:\n${stdout}${stderr}`))
    }, options.timeoutMs)
    child.once('error', reject)
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** Every package under a node_modules folder, nested ones too: name → its package.json. */
function installedPackages(nodeModules: string, out = new Map<string, { scripts?: Record<string, string> }>()) {
  if (!existsSync(nodeModules)) return out
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue
    const dirs = entry.startsWith('@') ? readdirSync(join(nodeModules, entry)).map((name) => join(entry, name)) : [entry]
    for (const name of dirs) {
      const manifest = join(nodeModules, name, 'package.json')
      if (existsSync(manifest)) out.set(name, JSON.parse(readFileSync(manifest, 'utf8')) as { scripts?: Record<string, string> })
      installedPackages(join(nodeModules, name, 'node_modules'), out)
    }
  }
  return out
}

describe('npm pack, then npm install ./tsq-*.tgz into an empty project', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'tsq-pack-'))
  const project = join(tmp, 'project')
  const home = join(tmp, 'home')
  const brokerUrl = `file://${join(tmp, 'broker')}`
  const env = projectEnv(home)
  const tsq = join(project, 'node_modules', '.bin', 'tsq')
  let packed: string[] = []
  let install: Run
  let worker: ChildProcess | undefined

  before(
    async () => {
      assert.ok(existsSync(join(ROOT, 'dist', 'bundle', 'tsq.js')), 'the tree is built (npm run build) before it is packed')
      mkdirSync(project)
      mkdirSync(home)
      // --ignore-scripts: prepack would build again, and CI has just built the tree.
      const pack = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', tmp], {
        cwd: ROOT,
        env,
        timeoutMs: 120_000,
      })
      assert.equal(pack.code, 0, pack.stderr)
      const [tarball] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[]
      packed = tarball!.files.map((f) => f.path)
      writeFileSync(
        join(project, 'package.json'),
        JSON.stringify({ name: 'tsq-install-check', version: '1.0.0', private: true, type: 'module' }),
      )
      install = await run('npm', ['install', join(tmp, tarball!.filename), '--no-audit', '--no-fund', '--prefer-offline'], {
        cwd: project,
        env,
        timeoutMs: 600_000,
      })
      assert.equal(install.code, 0, `npm install exited ${install.code}:\n${install.stdout}${install.stderr}`)
    },
    { timeout: 720_000 },
  )

  after(async () => {
    if (worker && worker.exitCode === null && worker.signalCode === null) {
      worker.kill('SIGKILL')
      await new Promise((resolve) => worker!.once('exit', resolve))
    }
    rmSync(tmp, { recursive: true, force: true })
  })

  it('the tarball holds what runs: the built tree, the launcher, the manifest, the dashboard pages; no sources, tests or caches', () => {
    for (const file of [
      'package.json',
      'README.md',
      'oclif.manifest.json',
      'bin/run.js',
      'bin/code-cache.js',
      'bin/package.json',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/bundle/tsq.js',
      'dist/bundle/fast.cjs',
      'dist/dashboard/web/index.html',
    ])
      assert.ok(packed.includes(file), `${file} is packed`)
    const stray = packed.filter(
      (file) =>
        !/^(package\.json|README\.md|LICENSE|oclif\.manifest\.json|bin\/|dist\/)/.test(file) ||
        file === 'bin/dev.js' ||
        /\.v8cache|\.tmp$|\.test\.|(^|\/)src\//.test(file),
    )
    assert.deepEqual(stray, [])
  })

  it('compiles nothing: the SQL drivers are left out, and only prebuilt-binary checks have install scripts', () => {
    const packages = installedPackages(join(project, 'node_modules'))
    assert.ok(packages.has('tsq') && packages.has('tsx'), 'tsq and tsx are installed')
    assert.deepEqual(
      DRIVERS.filter((name) => packages.has(name)),
      [],
      'SQL drivers installed by default',
    )
    const withScripts = [...packages]
      .filter(([, manifest]) => ['preinstall', 'install', 'postinstall'].some((s) => manifest.scripts?.[s]))
      .map(([name]) => name)
      .filter((name) => !INSTALL_SCRIPTS_ALLOWED.has(name))
    assert.deepEqual(withScripts, [], 'packages with an install script besides esbuild')
    assert.doesNotMatch(install.stdout + install.stderr, /node-gyp|gyp info|prebuild-install/)
  })

  it('npx tsq --version answers through node_modules/.bin', async () => {
    // --no: never fetch a package of that name from the registry; the project's own is the one to run.
    const r = await run('npx', ['--no', '--', 'tsq', '--version'], { cwd: project, env, timeoutMs: 60_000 })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, new RegExp(`^tsq/${VERSION.replace(/\./g, '\\.')} `))
  })

  it('a .ts task module and a script importing tsq by name typecheck, and the task runs on a worker', { timeout: 240_000 }, async () => {
    writeFileSync(
      join(project, 'tasks.ts'),
      [
        "import { createApp } from 'tsq'",
        '',
        "export const app = createApp({ name: 'proj' })",
        '',
        "export const add = app.task('proj.add', (x: number, y: number): number => x + y)",
        '',
      ].join('\n'),
    )
    writeFileSync(
      join(project, 'send.ts'),
      [
        "import { AsyncResult } from 'tsq'",
        "import { add, app } from './tasks.js'",
        '',
        'const result: AsyncResult = await add.delay(2, 3)',
        'const sum = await result.get({ timeout: 60 })',
        'console.log(JSON.stringify({ sum }))',
        'await app.close()',
        '',
      ].join('\n'),
    )
    // The project's own declarations only, with skipLibCheck off: every .d.ts the package
    // reaches must resolve from what the install brought (Node's types come from here).
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['tasks.ts', 'send.ts'],
      }),
    )
    const tsc = await run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], {
      cwd: project,
      env,
      timeoutMs: 180_000,
    })
    assert.equal(tsc.code, 0, `tsc:\n${tsc.stdout}${tsc.stderr}`)

    const nodename = `pack-install-${process.pid}@localhost`
    // The .bin entry itself (the sh lines of bin/run.js exec node), so its pid is the worker's.
    worker = spawn(tsq, ['worker', '-A', 'tasks.ts', '-b', brokerUrl, '-P', 'solo', '-l', 'INFO', '-n', nodename], {
      cwd: project,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    worker.stdout!.on('data', (d) => (output += d))
    worker.stderr!.on('data', (d) => (output += d))
    const exited = new Promise<number | null>((resolve) => worker!.once('exit', (code) => resolve(code)))
    const deadline = Date.now() + 90_000
    while (!output.includes(`${nodename} ready.`)) {
      assert.equal(worker.exitCode, null, `worker exited early:\n${output}`)
      assert.ok(Date.now() < deadline, `worker not ready in time:\n${output}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.match(output, /\. proj\.add/)

    const send = await run(process.execPath, ['--import', 'tsx', 'send.ts'], {
      cwd: project,
      env: projectEnv(home, { TSQ_BROKER_URL: brokerUrl }),
      timeoutMs: 90_000,
    })
    assert.equal(send.code, 0, `send.ts:\n${send.stdout}${send.stderr}\nworker:\n${output}`)
    assert.deepEqual(JSON.parse(send.stdout.trim()), { sum: 5 })
    assert.match(output, /Task proj\.add\[[0-9a-f-]+\] succeeded in [\d.]+s: 5/)

    process.kill(worker.pid!, 'SIGTERM')
    assert.equal(await exited, 0, output)
  })

  it('a db+ result backend without its driver: one line naming the package to install, exit 69', async () => {
    const r = await run(
      tsq,
      ['result', '3c0b54c2-7a53-4a3e-9b8e-6d0d2f4b7d1e', '-b', brokerUrl, '--result-backend', 'db+sqlite:///results.db'],
      {
        cwd: project,
        env,
        timeoutMs: 60_000,
      },
    )
    assert.equal(r.code, 69, r.stdout + r.stderr)
    assert.equal(r.stderr.trim(), 'Error: sqlite:///results.db needs the "better-sqlite3" package: npm install better-sqlite3')
    assert.equal(existsSync(join(project, 'results.db')), false, 'no database file made')
  })
})
