// `app.control` of Celery: broadcast a remote-control command and collect the
// replies. The CLI commands stay thin by calling only this.
import { CONTROL_COMMANDS, matchPattern } from '../protocol/index.js'
import { MailboxClient, type NodeReply } from '../transport/index.js'
import { withTransport } from './connection.js'

export interface RemoteCallOptions {
  brokerUrl: string
  arguments?: Record<string, unknown>
  destination?: string[] | null
  pattern?: string | null
  matcher?: 'glob' | 'pcre' | null
  timeout?: number
  limit?: number | null
  onReply?: (reply: NodeReply) => void
}

export async function broadcast(method: string, options: RemoteCallOptions): Promise<NodeReply[]> {
  return withTransport(options.brokerUrl, async (transport) => {
    const mailbox = new MailboxClient(transport)
    const replies = await mailbox.broadcast(method, {
      arguments: options.arguments,
      destination: options.destination,
      pattern: options.pattern,
      matcher: options.matcher,
      timeout: options.timeout,
      limit: options.limit,
      onReply: options.onReply,
    })
    return filterByPattern(replies, options.pattern ?? null, options.matcher ?? null)
  })
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
