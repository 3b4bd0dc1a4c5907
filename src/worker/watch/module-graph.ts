// Which files the task module loaded, so `tsq worker --watch` knows what to
// watch: every file the ES module loader loads (a hook that only records the
// URL and passes on, registered before the module is imported, so TypeScript
// through tsx and a file that fails to parse are seen too), and what
// CommonJS's require() cached. Packages (anything under node_modules) and
// tsq's own files are left out: a reload is for the user's code.
import { createRequire, register } from 'node:module'
import { dirname, join, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MessageChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads'
import { nearestPackageDir } from '../../app/index.js'

// Runs on Node's loader thread, as a data: URL so that it needs no file of its own beside the bundle.
const HOOKS = `let port
export function initialize(data) { port = data.port }
export async function load(url, context, next) {
  if (url.startsWith('file:')) port.postMessage(url)
  return next(url, context)
}`

export class ModuleGraph {
  private readonly port: MessagePort
  private readonly seen = new Set<string>()

  private constructor(port: MessagePort) {
    this.port = port
  }

  /** Starts recording: call before the module is imported. */
  static track(): ModuleGraph {
    const { port1, port2 } = new MessageChannel()
    register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, { data: { port: port2 }, transferList: [port2] })
    port1.unref()
    return new ModuleGraph(port1)
  }

  /**
   * The user's files loaded so far, absolute paths, `extra` (the -A and -I
   * paths) among them. Read synchronously off the port: the hook posts a URL
   * before the loader reads the file, so every import that has settled is here.
   */
  files(extra: readonly string[] = []): string[] {
    for (let m = receiveMessageOnPort(this.port); m; m = receiveMessageOnPort(this.port)) {
      try {
        this.seen.add(fileURLToPath(m.message as string))
      } catch {
        // Not a file: URL after all.
      }
    }
    const required = Object.keys(createRequire(import.meta.url).cache)
    const own = ownDirs()
    return [...new Set([...extra, ...this.seen, ...required])].filter(
      (path) => !path.split(sep).includes('node_modules') && !own.some((dir) => path.startsWith(dir)),
    )
  }
}

/** tsq's own code (the default app, the launcher, and tsq itself when a task module imports it by path). */
function ownDirs(): string[] {
  const root = nearestPackageDir(dirname(fileURLToPath(import.meta.url)))
  return root === undefined ? [] : ['dist', 'src', 'bin'].map((dir) => join(root, dir) + sep)
}
