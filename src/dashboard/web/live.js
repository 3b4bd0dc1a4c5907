// What the pages know of the cluster besides their own calls: the state the
// page's first response carried (read once, for the page it was loaded at),
// and the server's event stream (/api/ui/stream), whose updates each page
// hears through `listeners` and the status line shows.
import { h, PREFIX, url } from './lib.js'

/** The shown page's handlers of the stream's updates: `{tasks, workers, summary}`, or `{resync: true}` to reload. */
export const listeners = new Set()

let summary = null

/** The state embedded in the page (src/dashboard/initial-state.ts): until a page takes it. */
let initial = readInitial()

function readInitial() {
  const block = document.getElementById('tsq-initial')
  try {
    return JSON.parse(block?.textContent || 'null')
  } catch {
    // A page without its state still works: each page then asks for its rows.
    return null
  }
}

/** The path below --url-prefix of the page shown. */
export const pagePath = () => location.pathname.slice(PREFIX.length) || '/'

/**
 * The rows the page's first response carried under `key` (`workers`, `tasks`, `overview`), or null:
 * given once, to the page at the address it was loaded at, so a page opened later asks for its own.
 */
export function takeInitial(key) {
  const state = initial
  initial = null
  if (!state || state.path !== pagePath()) return null
  return state[key] ?? null
}

/** The embedded state is for the first page shown only. */
export function forgetInitial() {
  initial = null
}

function renderStatus() {
  const el = document.getElementById('status')
  el.replaceChildren()
  if (!summary) return
  el.append(
    h('span', { class: `dot${summary.connected ? ' up' : ''}` }),
    `${summary.broker} · ${summary.workersOnline}/${summary.workers} workers online · ${summary.tasks} tasks held (max ${summary.maxTasks}) · ${summary.events} events`,
  )
}

/** The status line from the embedded state, then the live stream. */
export function connectStream() {
  summary = initial?.summary ?? null
  renderStatus()
  const source = new EventSource(url('/api/ui/stream'))
  source.addEventListener('hello', (e) => {
    summary = JSON.parse(e.data)
    renderStatus()
    for (const fn of listeners) fn({ tasks: [], workers: [], resync: true })
  })
  source.addEventListener('update', (e) => {
    const data = JSON.parse(e.data)
    summary = data.summary
    renderStatus()
    for (const fn of listeners) fn(data)
  })
  source.addEventListener('resync', () => {
    for (const fn of listeners) fn({ tasks: [], workers: [], resync: true })
  })
}
