// A copy of the built tsq that any user can read, for tests whose processes
// give up root (`--uid nobody`): a clone may sit in a directory only its owner
// can enter (root's home, `mktemp -d`), and a process that has become nobody
// could then load neither bin/run.js, the bundle's lazy chunks, the pool's
// entry, the dependencies nor a task module from it. What a running tsq reads
// is copied: package.json (for `import 'tsq'`), bin/, dist/, the production
// dependencies, and the files a test names; the copy is removed with remove().
import { chmodSync, cpSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from './cli.js'

export interface WorldReadableInstall {
  /** The copy's root: a working directory the unprivileged process can use. */
  root: string
  /** The copy's bin/run.js. */
  bin: string
  /** The copy of a file given to worldReadableInstall, by its path in the repo. */
  path(repoPath: string): string
  remove(): void
}

/** The installed packages npm ci puts in node_modules for production, from the lock file. */
function productionPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> }
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path.startsWith('node_modules/') && !path.includes('/node_modules/', 1) && !entry.dev)
    .map(([path]) => path)
    .filter((path) => existsSync(join(ROOT, path)))
}

/** a+r on every file (a+x where anyone may run it), a+rx on every folder. */
function openToAll(path: string): void {
  const stat = lstatSync(path)
  if (stat.isSymbolicLink()) return
  if (stat.isDirectory()) {
    chmodSync(path, stat.mode | 0o555)
    for (const name of readdirSync(path)) openToAll(join(path, name))
  } else {
    chmodSync(path, stat.mode | 0o444 | (stat.mode & 0o111 ? 0o111 : 0))
  }
}

export function worldReadableInstall(files: readonly string[]): WorldReadableInstall {
  const root = mkdtempSync(join(tmpdir(), 'tsq-world-readable-'))
  const remove = () => rmSync(root, { recursive: true, force: true })
  process.once('exit', remove)
  for (const path of ['package.json', 'oclif.manifest.json', 'bin', 'dist', ...productionPackages(), ...files]) {
    cpSync(join(ROOT, path), join(root, path), { recursive: true })
  }
  openToAll(root)
  return { root, bin: join(root, 'bin', 'run.js'), path: (repoPath) => join(root, repoPath), remove }
}
