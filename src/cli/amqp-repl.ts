// `tsq amqp repl`: Celery's amqp shell (click-repl). One admin connection for
// the whole session, so `basic.get` then `basic.ack` act on the same channel;
// lines split as Python's shlex splits them; command names complete on Tab;
// history kept in a file between sessions. On a non-terminal stdin it runs the
// lines it is given, so a session can be scripted.
import { appendFile, mkdir, readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { createInterface } from 'node:readline'
import type { Readable, Writable } from 'node:stream'
import { split } from 'shlex'
import { AMQP_COMMAND_NAMES } from '../admin/index.js'

const HISTORY_SIZE = 1000
const EXIT_WORDS = new Set(['exit', 'quit', ':q', ':quit', ':exit'])
const HELP_WORDS = new Set(['help', ':h', ':help', ':?'])

export interface AmqpReplOptions {
  input: Readable & { isTTY?: boolean }
  output: Writable
  /** Runs one command line; returns the lines to print. */
  run(words: string[]): Promise<string[]>
  /** Prints a command's error (one line) and goes on. */
  reportError(error: Error): void
  historyFile: string | null
  help: string
}

export function completeCommandName(line: string): [string[], string] {
  const word = line.trimStart()
  if (word.includes(' ')) return [[], line]
  const names = [...AMQP_COMMAND_NAMES, 'help', 'exit']
  return [names.filter((name) => name.startsWith(word)), word]
}

async function loadHistory(file: string | null): Promise<string[]> {
  if (!file) return []
  try {
    // readline wants the most recent first.
    return (await readFile(file, 'utf8')).split('\n').filter(Boolean).slice(-HISTORY_SIZE).reverse()
  } catch {
    return []
  }
}

/** Returns how many commands failed. */
export async function runAmqpRepl(options: AmqpReplOptions): Promise<number> {
  const terminal = options.input.isTTY === true
  const rl = createInterface({
    input: options.input,
    output: options.output,
    terminal,
    completer: completeCommandName,
    history: terminal ? await loadHistory(options.historyFile) : [],
    historySize: HISTORY_SIZE,
    prompt: '> ',
  })
  const print = (line: string) => options.output.write(`${line}\n`)
  let failures = 0
  if (terminal && options.historyFile) await mkdir(dirname(options.historyFile), { recursive: true }).catch(() => undefined)
  if (terminal) rl.prompt()
  for await (const raw of rl) {
    const line = raw.trim()
    if (line && terminal && options.historyFile) await appendFile(options.historyFile, `${line}\n`).catch(() => undefined)
    if (EXIT_WORDS.has(line)) break
    if (HELP_WORDS.has(line)) print(options.help)
    else if (line && !line.startsWith('#')) {
      try {
        for (const out of await options.run(split(line))) print(out)
      } catch (err) {
        failures += 1
        options.reportError(err instanceof Error ? err : new Error(String(err)))
      }
    }
    if (terminal) rl.prompt()
  }
  rl.close()
  return failures
}
