// The shared body of `tsq inspect` and `tsq control`: type the positional
// arguments as Celery's CLI does, broadcast, render as Celery renders.
import { broadcast, flattenReplies } from '../client/index.js'
import {
  CONTROL_COMMANDS,
  compileArguments,
  didYouMean,
  maskUrlsInText,
  nearestNames,
  visibleCommands,
  type ControlKind,
} from '../protocol/index.js'
import type { NodeReply, TransportSettings } from '../transport/index.js'
import type { ChalkInstance } from 'chalk'
import type { ClientConfig } from './client-config.js'
import { NoRepliesError, UsageError } from './errors.js'
import { remoteOptions, type RemoteFlagValues } from './flags/remote-flags.js'
import { renderNodeCount, renderReply } from './render/replies.js'
import { activeQueuesTable, statsTable, statusTable } from './render/tables.js'

// Shared by the oclif commands and the fast path (fast-path.ts), which must not
// load oclif: nothing here may import it.

/** Where a remote command goes and how it prints: the same for inspect, control and status, on oclif's path and the fast one. */
export interface RemoteTarget {
  brokerUrl: string
  /** Where the broker URL came from; 'default' is the embedded file:// broker no flag, variable or app named. */
  brokerSource?: ClientConfig['brokerSource']
  transportSettings?: TransportSettings
  /** With -A: the app's own remote-control commands (app.controlCommand) and their kind. */
  customCommands?: ReadonlyMap<string, ControlKind>
  json: boolean
  color: ChalkInstance
  print: (line: string) => void
}

/** A command's target from its client configuration and its output. */
export function remoteTarget(config: ClientConfig, output: Pick<RemoteTarget, 'json' | 'color' | 'print'>): RemoteTarget {
  return {
    brokerUrl: config.brokerUrl,
    brokerSource: config.brokerSource,
    transportSettings: config.transportSettings,
    customCommands: config.controlCommands,
    ...output,
  }
}

export interface RemoteRun extends RemoteTarget {
  kind: ControlKind
  method: string
  words: string[]
  flags: RemoteFlagValues & { broker?: string; quiet?: boolean; terminate?: boolean; signal?: string }
}

const TABLES: Record<string, (r: Record<string, unknown>, c: ChalkInstance) => Promise<string>> = {
  active_queues: activeQueuesTable,
  stats: statsTable,
}

const OTHER: Record<ControlKind, ControlKind> = { inspect: 'control', control: 'inspect' }

/** The kind of a method tsq knows without asking a worker: Celery's built-ins, their aliases, the -A app's own. */
function kindOf(method: string, custom: ReadonlyMap<string, ControlKind> | undefined): ControlKind | undefined {
  if (Object.hasOwn(CONTROL_COMMANDS, method)) return CONTROL_COMMANDS[method]!.kind
  const aliased = Object.values(CONTROL_COMMANDS).find((meta) => meta.alias === method)
  return aliased?.kind ?? custom?.get(method)
}

/** The names of one kind offered to a user: the visible built-ins, then the app's own. */
function methodsOf(kind: ControlKind, custom: ReadonlyMap<string, ControlKind> | undefined): string[] {
  const own = [...(custom ?? [])].filter(([, k]) => k === kind).map(([name]) => name)
  return [...visibleCommands(kind), ...own.sort()]
}

/**
 * Checked before anything is broadcast. A built-in of the other kind is
 * refused; with -A, tsq knows every method the app's workers answer, so any
 * other name is refused, as Celery's CLI refuses a name its app's Panel does
 * not hold; without it, a name near a known one is a slip and never reaches a
 * worker, and any other is sent as the app's custom command.
 */
function checkMethod(kind: ControlKind, method: string, custom: ReadonlyMap<string, ControlKind> | undefined): void {
  const known = kindOf(method, custom)
  if (known === kind) return
  if (known) throw new UsageError(`${method} is ${known === 'inspect' ? 'an inspect' : 'a control'} command: use tsq ${known} ${method}`)
  if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(method) || custom) throw unknownMethod(kind, method, custom)
  if (nearestNames(method, methodsOf(kind, custom)).length || nearestNames(method, methodsOf(OTHER[kind], custom)).length)
    throw unknownMethod(kind, method, custom)
}

function unknownMethod(kind: ControlKind, method: string, custom?: ReadonlyMap<string, ControlKind>): Error {
  const names = methodsOf(kind, custom)
  const other = OTHER[kind]
  const hint = didYouMean(method, names) || didYouMean(method, methodsOf(other, custom), (name) => `tsq ${other} ${name}`)
  return Object.assign(new UsageError(`unknown method ${JSON.stringify(method)}${hint}; valid ${kind} methods: ${names.join(', ')}`), {
    code: 'UNKNOWN_METHOD',
  })
}

/** Every node answered that it has no such handler (kombu replies `KeyError('name')`). */
function noNodeKnows(method: string, merged: NodeReply): boolean {
  const bodies = Object.values(merged)
  return (
    bodies.length > 0 &&
    bodies.every((b) => {
      const error = (b as { error?: unknown } | null)?.error
      return typeof error === 'string' && error.startsWith('KeyError(') && error.includes(method)
    })
  )
}

/** `No nodes replied within time constraint`, naming the broker asked (and saying so when it is the embedded default). */
function noReplies(target: RemoteTarget): NoRepliesError {
  const embeddedDefault = target.brokerSource === 'default' && target.brokerUrl.startsWith('file://')
  return new NoRepliesError({ url: maskUrlsInText(target.brokerUrl), embeddedDefault })
}

export async function runRemote(run: RemoteRun): Promise<NodeReply | NodeReply[]> {
  checkMethod(run.kind, run.method, run.customCommands)
  let args: Record<string, unknown>
  try {
    args = { ...compileArguments(run.method, run.words), ...(run.kind === 'control' ? controlExtraArguments(run.method, run.flags) : {}) }
  } catch (error) {
    if (error instanceof UsageError) throw error
    throw new UsageError((error as Error).message)
  }
  const options = remoteOptions(run.flags)
  const table = TABLES[run.method]
  const streamed = !run.json && !table
  const replies = await broadcast(run.method, {
    brokerUrl: run.brokerUrl,
    transportSettings: run.transportSettings,
    arguments: args,
    ...options,
    onReply: streamed ? (reply) => run.print(renderReply(reply, run.color, true)) : undefined,
  })
  if (replies.length === 0) throw noReplies(run)
  const merged = flattenReplies(replies)
  if (kindOf(run.method, run.customCommands) === undefined && noNodeKnows(run.method, merged)) throw unknownMethod(run.kind, run.method)
  if (!run.json) {
    if (table) run.print(await table(merged, run.color))
    if (!run.flags.quiet) run.print(renderNodeCount(Object.keys(merged).length))
  }
  // Celery's -j prints {node: reply} for inspect and the raw list for control.
  return run.kind === 'inspect' ? merged : replies
}

/** `--terminate`/`--signal` of `tsq control revoke`, as the arguments Celery's revoke takes. */
export function controlExtraArguments(method: string, flags: { terminate?: boolean; signal?: string }): Record<string, unknown> {
  if (!flags.terminate) return {}
  if (method !== 'revoke') throw new UsageError('--terminate goes with revoke')
  return { terminate: true, signal: normalizeSignal(flags.signal ?? 'SIGTERM') }
}

/** Celery wants upper-case names; `kill`/`9` are what people type. */
function normalizeSignal(raw: string): string | number {
  if (/^\d+$/.test(raw)) return Number(raw)
  const upper = raw.toUpperCase()
  return upper.startsWith('SIG') ? upper : `SIG${upper}`
}

export interface StatusRun extends RemoteTarget {
  flags: RemoteFlagValues & { quiet?: boolean }
}

/** `tsq status`: ping everyone, a table of who answered, then the count. */
export async function runStatus(run: StatusRun): Promise<NodeReply> {
  const replies = await broadcast('ping', {
    brokerUrl: run.brokerUrl,
    transportSettings: run.transportSettings,
    ...remoteOptions(run.flags),
  })
  if (replies.length === 0) throw noReplies(run)
  const merged = flattenReplies(replies)
  const count = renderNodeCount(Object.keys(merged).length)
  if (run.json) {
    // Celery prints the count after the JSON; on stderr it cannot break a parser.
    if (!run.flags.quiet) process.stderr.write(`${count.trim()}\n`)
  } else {
    run.print(await statusTable(merged, run.color))
    if (!run.flags.quiet) run.print(count)
  }
  return merged
}
