// What every page of the dashboard builds with: elements (h() never parses
// HTML: a value from a worker, a task or a user is always a text node), the
// formats, the server's API, a toast, and what a page leaves running.

export const PREFIX = document.querySelector('meta[name="tsq-prefix"]').content
export const main = document.getElementById('main')
export const STATES = ['PENDING', 'RECEIVED', 'STARTED', 'SUCCESS', 'FAILURE', 'RETRY', 'REVOKED', 'REJECTED']

/** An element; strings and numbers among the children become text nodes. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else if (k === 'dataset') Object.assign(el.dataset, v)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c))
  return el
}

export const url = (path) => `${PREFIX}${path}`
export const fmtTime = (t) => (typeof t === 'number' ? new Date(t * 1000).toLocaleString() : '')
export const fmtAgo = (t) => (typeof t === 'number' ? `${Math.max(0, Math.round(Date.now() / 1000 - t))} s ago` : '—')
export const fmtRuntime = (r) => (typeof r === 'number' ? `${r.toFixed(3)} s` : '')
export const stateBadge = (s) => h('span', { class: `state state-${s}`, 'data-state': s }, s)
export const text = (v) => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v))

export function toast(message) {
  const el = document.getElementById('toast')
  el.textContent = message
  el.hidden = false
  clearTimeout(toast.timer)
  toast.timer = setTimeout(() => (el.hidden = true), 5000)
}

export async function api(path, options = {}) {
  const res = await fetch(url(path), { credentials: 'same-origin', ...options })
  const body = await res.text()
  if (!res.ok) {
    // A JSON refusal shows its reason, not its braces.
    let reason = body.trim()
    try {
      const parsed = JSON.parse(reason)
      if (parsed && typeof parsed.error === 'string') reason = parsed.error
    } catch {
      // Not JSON: the body's text is the reason.
    }
    throw new Error(`${res.status}: ${reason.slice(0, 300)}`)
  }
  return res.headers.get('content-type')?.includes('json') ? JSON.parse(body) : body
}

export const post = (path, json) =>
  api(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  })

export const link = (path, label) => h('a', { href: url(path), 'data-link': true }, label)

let cleanup = () => {}

/** What the page shown leaves running (a timer): stopped when another page is shown. */
export function onLeave(fn) {
  cleanup = fn
}

/** Stops what the page shown left running. */
export function leavePage() {
  cleanup()
  cleanup = () => {}
}

/** Every node's reply to a control command, as a table. */
export function repliesView(replies) {
  if (!replies.length) return h('p', { class: 'muted' }, 'No node replied.')
  return h(
    'table',
    { class: 'replies' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Node'), h('th', {}, 'Reply'))),
    h(
      'tbody',
      {},
      replies
        .flatMap((r) => Object.entries(r))
        .map(([node, body]) =>
          h(
            'tr',
            {},
            h('td', {}, node),
            h(
              'td',
              { class: 'wrap' },
              body && body.ok !== undefined
                ? `ok: ${text(body.ok)}`
                : body && body.error !== undefined
                  ? `error: ${text(body.error)}`
                  : text(body),
            ),
          ),
        ),
    ),
  )
}
