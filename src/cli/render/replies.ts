// Celery's human layout for remote-control replies (celery/bin/base.py `pretty`,
// celery/bin/control.py `_say_remote_command_reply`): `->  node: OK` and the
// body indented, lists as `* item`, dicts as sorted 4-space JSON.
import type { ChalkInstance } from 'chalk'
import { pyRepr } from '../../protocol/index.js'

function indent(text: string, by: number): string {
  const pad = ' '.repeat(by)
  return text
    .split('\n')
    .map((line) => pad + line)
    .join('\n')
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key])
    return out
  }
  return value
}

function pretty(value: unknown, c: ChalkInstance): [status: string, body: string] {
  const ok = c.green.bold('OK')
  if (Array.isArray(value)) {
    if (value.length === 0) return [ok, '- empty -']
    return [ok, value.map((item) => `${c.white('*')} ${typeof item === 'string' ? item : pyRepr(item)}`).join('\n')]
  }
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>
    if ('ok' in obj) return [ok, indent(pretty(obj.ok, c)[1], 4)]
    if ('error' in obj) return [c.red.bold('ERROR'), indent(pretty(obj.error, c)[1], 4)]
    return [ok, JSON.stringify(sortKeys(obj), null, 4)]
  }
  if (typeof value === 'string') return [ok, value]
  return [ok, pyRepr(value)]
}

/** One reply `{node: body}` as Celery prints it; the body is shown for inspect and control, not status. */
export function renderReply(reply: Record<string, unknown>, c: ChalkInstance, showBody: boolean): string {
  const node = Object.keys(reply)[0] ?? '?'
  const [status, body] = pretty(reply[node], c)
  const title = `${c.white.bold('->')}  ${c.cyan.bold(`${node}: `)}${status}`
  return showBody && body ? `${title}\n${indent(body, 4)}` : title
}

export function renderNodeCount(count: number): string {
  return `\n${count} ${count === 1 ? 'node' : 'nodes'} online.`
}
