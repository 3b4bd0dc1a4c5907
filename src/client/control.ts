// `app.control` of Celery: broadcast a remote-control command and collect the
// replies. The CLI commands stay thin by calling only this.
import { CONTROL_COMMANDS, matchPattern } from '../protocol/index.js'
import { MailboxClient, type BroadcastOptions, type NodeReply, type TransportSettings } from '../transport/index.js'
import { withTransport } from './connection.js'

/** A broadcast (the mailbox's options; `reply: false` is Celery's reply=False, revoke's default) on its own connection. */
export interface RemoteCallOptions extends Omit<BroadcastOptions, 'lastUse'> {
  brokerUrl: string
  /** The app's broker settings (broker_use_ssl, broker_login_method, ...). */
  transportSettings?: TransportSettings
}

export async function broadcast(method: string, options: RemoteCallOptions): Promise<NodeReply[]> {
  const { brokerUrl, transportSettings, ...call } = options
  return withTransport(
    brokerUrl,
    async (transport) => {
      // withTransport closes the transport next.
      const replies = await new MailboxClient(transport).broadcast(method, { ...call, lastUse: true })
      return filterByPattern(replies, options.pattern ?? null, options.matcher ?? null)
    },
    transportSettings,
  )
}

export type AppControlOptions = Omit<RemoteCallOptions, 'brokerUrl' | 'arguments' | 'transportSettings'>

/**
 * `app.control` of Celery, for code: the same broadcasts as `tsq control` and
 * `tsq inspect`, on the app's broker. Each call opens and closes its own
 * connection, as the CLI's do.
 */
export class AppControl {
  constructor(
    private readonly brokerUrl: () => string,
    private readonly transportSettings: () => TransportSettings = () => ({}),
  ) {}

  broadcast(method: string, args: Record<string, unknown> = {}, options: AppControlOptions = {}): Promise<NodeReply[]> {
    return broadcast(method, { ...options, arguments: args, brokerUrl: this.brokerUrl(), transportSettings: this.transportSettings() })
  }

  /**
   * Celery's `app.control.revoke(task_id, terminate=False, signal='SIGTERM')`:
   * no reply is awaited unless `reply: true` is given.
   */
  revoke(taskId: string | string[], options: AppControlOptions & { terminate?: boolean; signal?: string } = {}): Promise<NodeReply[]> {
    const { terminate = false, signal = 'SIGTERM', ...rest } = options
    return this.broadcast('revoke', { task_id: taskId, terminate, signal }, { reply: false, ...rest })
  }

  ping(options: AppControlOptions = {}): Promise<NodeReply[]> {
    return this.broadcast('ping', {}, options)
  }

  /** One `{node: reply}` object, as Celery's `app.control.inspect().<method>()`. */
  async inspect(method: string, args: Record<string, unknown> = {}, options: AppControlOptions = {}): Promise<NodeReply> {
    return flattenReplies(await this.broadcast(method, args, options))
  }
}

/** Celery's Inspect filters replies by the pattern again on the client side. */
function filterByPattern(replies: NodeReply[], pattern: string | null, matcher: 'glob' | 'pcre' | null): NodeReply[] {
  if (!pattern || !matcher) return replies
  return replies.filter((reply) => Object.keys(reply).some((node) => matchPattern(node, pattern, matcher)))
}

/** `Inspect._request`: the replies flattened into one `{node: reply}` object. */
export function flattenReplies(replies: NodeReply[]): NodeReply {
  const merged: NodeReply = {}
  for (const reply of replies) Object.assign(merged, reply)
  return merged
}

export function isKnownCommand(method: string): boolean {
  return method in CONTROL_COMMANDS
}
