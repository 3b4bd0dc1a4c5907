// The shared body of `tsq inspect` and `tsq control`: type the positional
// arguments as Celery's CLI does, broadcast, render as Celery renders.
import { broadcast, flattenReplies } from '../client/index.js'
import { CONTROL_COMMANDS, compileArguments, visibleCommands, type ControlKind } from '../protocol/index.js'
import type { NodeReply, TransportSettings } from '../transport/index.js'
import type { ChalkInstance } from 'chalk'
import { NoRepliesError, UsageError } from './errors.js'
import { remoteOptions, type RemoteFlagValues } from './remote-flags.js'
import { renderNodeCount, renderReply } from './render/replies.js'
import { activeQueuesTable, statsTable, statusTable } from './render/tables.js'

// Shared by the oclif commands and the fast path (fast-path.ts), which must not
// load oclif: nothing here may import it.

export interface RemoteRun {
  kind: ControlKind
  method: string
  words: string[]
  extraArguments?: Record<string, unknown>
  flags: RemoteFlagValues & { broker?: string; quiet?: boolean }
  brokerUrl: string
  transportSettings?: TransportSettings
  json: boolean
  color: ChalkInstance
  print: (line: string) => void
}

const TABLES: Record<string, (r: Record<string, unknown>, c: ChalkInstance) => Promise<string>> = {
  active_queues: activeQueuesTable,
  stats: statsTable,
}

/** Built-ins of the other kind are refused; any unknown name is a custom command. */
function checkMethod(kind: ControlKind, method: string): void {
  const meta = CONTROL_COMMANDS[method]
  if (meta && meta.kind !== kind) {
    const other = meta.kind === 'inspect' ? 'tsq inspect' : 'tsq control'
    throw new UsageError(`${method} is an ${meta.kind} command: use ${other} ${method}`)
  }
  if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(method)) throw unknownMethod(kind, method)
}

function unknownMethod(kind: ControlKind, method: string): Error {
  return Object.assign(
    new UsageError(`unknown method ${JSON.stringify(method)}; valid ${kind} methods: ${visibleCommands(kind).join(', ')}`),
    { code: 'UNKNOWN_METHOD' },
  )
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

export async function runRemote(run: RemoteRun): Promise<NodeReply | NodeReply[]> {
  checkMethod(run.kind, run.method)
  let args: Record<string, unknown>
  try {
    args = { ...compileArguments(run.method, run.words), ...run.extraArguments }
  } catch (error) {
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
  if (replies.length === 0) throw new NoRepliesError()
  const merged = flattenReplies(replies)
  if (!CONTROL_COMMANDS[run.method] && noNodeKnows(run.method, merged)) throw unknownMethod(run.kind, run.method)
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

export interface StatusRun {
  flags: RemoteFlagValues & { quiet?: boolean }
  brokerUrl: string
  transportSettings?: TransportSettings
  json: boolean
  color: ChalkInstance
  print: (line: string) => void
}

/** `tsq status`: ping everyone, a table of who answered, then the count. */
export async function runStatus(run: StatusRun): Promise<NodeReply> {
  const replies = await broadcast('ping', {
    brokerUrl: run.brokerUrl,
    transportSettings: run.transportSettings,
    ...remoteOptions(run.flags),
  })
  if (replies.length === 0) throw new NoRepliesError()
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
