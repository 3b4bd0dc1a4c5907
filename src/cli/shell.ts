// `tsq shell`: Celery's shell for a JavaScript app. A Node REPL on a terminal;
// a script from stdin otherwise, run as one async function so `await` works at
// its top level and an uncaught error ends it non-zero.
import { homedir } from 'node:os'
import { join } from 'node:path'
import repl from 'node:repl'
import { signature, type App, type Task } from '../app/index.js'
import { codedError } from '../protocol/index.js'

/**
 * A task whose delay() also answers `.get()`, so `await add.delay(2, 2).get()`
 * reads in the shell as it does in Celery's (delay() itself returns a promise).
 */
function shellTask(task: Task): Task {
  return new Proxy(task, {
    get(target, prop, receiver) {
      if (prop !== 'delay') return Reflect.get(target, prop, receiver)
      return (...args: unknown[]) => {
        const sent = target.delay(...args)
        return Object.assign(sent, {
          get: (...options: unknown[]) => sent.then((r) => (r.get as (...a: unknown[]) => unknown)(...options)),
        })
      }
    },
  })
}

/** What the shell holds: the app, canvas helpers, and each task under its short name and in `tasks`. */
export function shellContext(app: App, o: { withoutTasks: boolean }): Record<string, unknown> {
  const context: Record<string, unknown> = {
    app,
    celery: app,
    signature,
    chain: app.chain.bind(app),
    group: app.group.bind(app),
    chord: app.chord.bind(app),
    chunks: (task: Task, it: Iterable<unknown[]>, n: number) => task.chunks(it, n),
  }
  if (o.withoutTasks) return context
  const tasks: Record<string, Task> = {}
  for (const [name, task] of app.tasks) {
    if (name.startsWith('celery.')) continue
    tasks[name] = shellTask(task)
    const short = name.split('.').at(-1)!
    // A short name never hides a helper (a task called `chain` stays in `tasks` only).
    if (/^[A-Za-z_$][\w$]*$/.test(short) && !(short in context)) context[short] = tasks[name]
  }
  context.tasks = tasks
  return context
}

const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (
  ...args: string[]
) => (...values: unknown[]) => Promise<unknown>

export class ShellScriptError extends codedError('SCRIPT_FAILED') {}

/** Runs `code` with the context's names in scope; an uncaught error becomes a ShellScriptError (exit 1). */
export async function runShellScript(code: string, context: Record<string, unknown>): Promise<void> {
  const names = Object.keys(context)
  try {
    await new AsyncFunction(...names, code)(...names.map((n) => context[n]))
  } catch (error) {
    const e = error as Error
    throw new ShellScriptError(`Uncaught ${e?.name ?? 'Error'}: ${e?.message ?? String(error)}`, { cause: error })
  }
}

/** The interactive shell; resolves when it is left (.exit, Ctrl-D). */
export function startShellRepl(context: Record<string, unknown>, banner: string): Promise<void> {
  process.stdout.write(`${banner}\n`)
  const server = repl.start({ prompt: 'tsq> ', useGlobal: false })
  Object.assign(server.context, context)
  const history = process.env.TSQ_SHELL_HISTORY ?? join(homedir(), '.tsq_shell_history')
  server.setupHistory(history, () => undefined)
  return new Promise((resolve) => server.on('exit', () => resolve()))
}
