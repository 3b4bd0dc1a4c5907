// The dashboard's pages: ES modules (this one, lib.js, features.js), no
// framework, no build step. Every value that came from a worker, a task or a
// user goes into the page as a text node (lib.js's h() never parses HTML), so
// a task whose args hold <script> shows text.
// Live updates come from the server's event stream (/api/ui/stream); a page
// reloads only the one page of rows it shows, never the whole table.
import { archivePage, locksPage, schedulePage } from './features.js'
import { api, fmtAgo, fmtRuntime, fmtTime, h, leavePage, link, main, onLeave, post, PREFIX, stateBadge, STATES, text, url } from './lib.js'

// ---- live stream -------------------------------------------------------------

const listeners = new Set()
let summary = null

function renderStatus() {
  const el = document.getElementById('status')
  el.replaceChildren()
  if (!summary) return
  el.append(
    h('span', { class: `dot${summary.connected ? ' up' : ''}` }),
    `${summary.broker} · ${summary.workersOnline}/${summary.workers} workers online · ${summary.tasks} tasks held (max ${summary.maxTasks}) · ${summary.events} events`,
  )
}

function connectStream() {
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

// ---- router ------------------------------------------------------------------

function route() {
  leavePage()
  listeners.clear()
  const path = location.pathname.slice(PREFIX.length) || '/'
  for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', path.startsWith(`/${a.dataset.page}`))
  main.replaceChildren()
  let page
  if (path.startsWith('/worker/')) page = workerPage(decodeURIComponent(path.slice(8)))
  else if (path.startsWith('/task/')) page = taskPage(decodeURIComponent(path.slice(6)))
  else if (path === '/tasks') page = tasksPage()
  else if (path === '/queues' || path === '/broker') page = queuesPage()
  else if (path === '/overview') page = overviewPage()
  else if (path === '/archive') page = archivePage()
  else if (path === '/locks') page = locksPage()
  else if (path === '/schedule') page = schedulePage()
  else page = workersPage()
  Promise.resolve(page).catch((error) => main.replaceChildren(h('p', { class: 'offline' }, `Could not load: ${error.message}`)))
}

document.addEventListener('click', (e) => {
  const a = e.target.closest('a[data-nav], a[data-link]')
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return
  e.preventDefault()
  history.pushState(null, '', a.getAttribute('href'))
  route()
})
window.addEventListener('popstate', route)

// ---- workers -----------------------------------------------------------------

async function workersPage() {
  const tbody = h('tbody')
  main.append(
    h('h1', {}, 'Workers'),
    h(
      'table',
      { id: 'workers' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          [
            'Worker',
            'Status',
            'Software',
            'Pool',
            'Concurrency',
            'Active',
            'Processed',
            'Succeeded',
            'Failed',
            'Retried',
            'Load average',
            'Last heartbeat',
            'Queues',
          ].map((c) => h('th', {}, c)),
        ),
      ),
      tbody,
    ),
  )
  const workers = new Map()
  const draw = () => {
    tbody.replaceChildren(
      ...[...workers.values()]
        .sort((a, b) => a.hostname.localeCompare(b.hostname))
        .map((w) =>
          h(
            'tr',
            { 'data-worker': w.hostname },
            h('td', {}, link(`/worker/${encodeURIComponent(w.hostname)}`, w.hostname)),
            h('td', { class: w.online ? 'online' : 'offline' }, w.online ? 'Online' : 'Offline'),
            h('td', {}, w.software ?? ''),
            h('td', {}, w.pool ?? ''),
            h('td', {}, w.concurrency ?? ''),
            h('td', {}, w.active ?? ''),
            h('td', {}, w.processed ?? ''),
            h('td', {}, w.succeeded),
            h('td', {}, w.failed),
            h('td', {}, w.retried),
            h('td', {}, Array.isArray(w.loadavg) ? w.loadavg.map((n) => n.toFixed(2)).join(', ') : ''),
            h('td', {}, fmtAgo(w.heartbeat)),
            h('td', {}, (w.queues ?? []).join(', ')),
          ),
        ),
    )
  }
  const load = async () => {
    const data = await api('/api/ui/workers')
    workers.clear()
    for (const w of data.workers) workers.set(w.hostname, w)
    draw()
  }
  await load()
  listeners.add((data) => {
    if (data.resync) return void load()
    for (const w of data.workers) workers.set(w.hostname, w)
    if (data.workers.length) draw()
  })
  const timer = setInterval(draw, 2000)
  onLeave(() => clearInterval(timer))
}

function repliesView(replies) {
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

async function workerPage(name) {
  const head = h('div')
  const body = h('div')
  const out = h('div', { id: 'action-replies' })
  main.append(h('h1', {}, name), head, h('h2', {}, 'Actions'), actionsFor(name, out), out, body)
  const load = async (refresh) => {
    const data = await api(`/api/ui/worker/${encodeURIComponent(name)}${refresh ? '?refresh=1' : ''}`)
    const s = data.summary
    const stats = data.inspect.stats ?? {}
    head.replaceChildren(
      h(
        'table',
        { class: 'kv', id: 'worker-summary' },
        h(
          'tbody',
          {},
          [
            ['Status', s.online ? 'Online' : 'Offline'],
            ['Software', s.software],
            ['PID', s.pid],
            ['Pool', s.pool],
            ['Concurrency', s.concurrency],
            ['Processes', Array.isArray(stats.pool?.processes) ? stats.pool.processes.join(', ') : ''],
            ['Prefetch count', stats.prefetch_count],
            ['Active', s.active],
            ['Processed', s.processed],
            ['Succeeded / failed / retried', `${s.succeeded} / ${s.failed} / ${s.retried}`],
            ['Load average', Array.isArray(s.loadavg) ? s.loadavg.join(', ') : ''],
            ['Last heartbeat', fmtAgo(s.heartbeat)],
            ['Queues', (s.queues ?? []).join(', ')],
            ['Inspected', fmtTime(data.inspect.timestamp)],
          ].map(([k, v]) => h('tr', {}, h('td', {}, k), h('td', { 'data-field': k }, v ?? ''))),
        ),
      ),
    )
    const section = (title, value) =>
      h('div', { class: 'card' }, h('h2', {}, title), h('pre', { 'data-section': title }, JSON.stringify(value ?? null, null, 2)))
    body.replaceChildren(
      h(
        'div',
        { class: 'grid' },
        section('Registered tasks', data.inspect.registered),
        section('Active', data.inspect.active),
        section('Reserved', data.inspect.reserved),
        section('Scheduled', data.inspect.scheduled),
        section('Revoked', data.inspect.revoked),
        section('Queues', data.inspect.active_queues),
        section('Stats', data.inspect.stats),
        section('Configuration', data.inspect.conf),
      ),
    )
  }
  await load(true)
  listeners.add((data) => {
    if (data.workers.some((w) => w.hostname === name)) void load(false)
  })
  workerPage.reload = () => load(true)
}

function actionsFor(name, out) {
  const act = async (label, method, args) => {
    if (!window.confirm(`${label} on ${name}?`)) return
    try {
      const result = await post(`/api/ui/control/${method}`, { destination: [name], arguments: args })
      out.replaceChildren(h('h2', {}, label), repliesView(result.replies))
      setTimeout(() => workerPage.reload?.(), 300)
    } catch (error) {
      out.replaceChildren(h('p', { class: 'offline' }, `${label} failed: ${error.message}`))
    }
  }
  const form = (label, fields, submit, cls) => {
    const inputs = fields.map(([key, placeholder, value]) =>
      h('input', { name: key, placeholder, value: value ?? '', size: 10, 'aria-label': placeholder }),
    )
    return h(
      'form',
      {
        'data-action': label,
        onsubmit: (e) => {
          e.preventDefault()
          const v = Object.fromEntries(inputs.map((i) => [i.name, i.value.trim()]))
          submit(v)
        },
      },
      inputs,
      h('button', { type: 'submit', class: cls }, label),
    )
  }
  const num = (v) => (v === '' ? null : Number(v))
  return h(
    'div',
    { class: 'actions' },
    form('Pool grow', [['n', 'n', '1']], (v) => act('Pool grow', 'pool_grow', { n: num(v.n) }), 'primary'),
    form('Pool shrink', [['n', 'n', '1']], (v) => act('Pool shrink', 'pool_shrink', { n: num(v.n) })),
    form(
      'Autoscale',
      [
        ['max', 'max'],
        ['min', 'min'],
      ],
      (v) => act('Autoscale', 'autoscale', { max: num(v.max), min: num(v.min) }),
    ),
    form('Add consumer', [['queue', 'queue']], (v) => act('Add consumer', 'add_consumer', { queue: v.queue })),
    form('Cancel consumer', [['queue', 'queue']], (v) => act('Cancel consumer', 'cancel_consumer', { queue: v.queue })),
    form(
      'Rate limit',
      [
        ['task', 'task name'],
        ['rate', 'e.g. 10/m'],
      ],
      (v) => act('Rate limit', 'rate_limit', { task_name: v.task, rate_limit: v.rate }),
    ),
    form(
      'Time limit',
      [
        ['task', 'task name'],
        ['soft', 'soft s'],
        ['hard', 'hard s'],
      ],
      (v) => act('Time limit', 'time_limit', { task_name: v.task, soft: num(v.soft), hard: num(v.hard) }),
    ),
    form('Restart pool', [], () => act('Restart pool', 'pool_restart', { reload: false })),
    form('Shut down', [], () => act('Shut down', 'shutdown', {}), 'danger'),
  )
}

// ---- tasks -------------------------------------------------------------------

const TASK_COLUMNS = [
  ['uuid', 'UUID'],
  ['name', 'Name'],
  ['state', 'State'],
  ['args', 'args'],
  ['kwargs', 'kwargs'],
  ['result', 'Result'],
  ['received', 'Received'],
  ['started', 'Started'],
  ['runtime', 'Runtime'],
  ['worker', 'Worker'],
]
const SORTABLE = new Set(['uuid', 'name', 'state', 'received', 'started', 'runtime', 'worker'])

async function tasksPage() {
  const params = new URLSearchParams(location.search)
  const q = {
    limit: Number(params.get('limit') ?? 25),
    offset: Number(params.get('offset') ?? 0),
    sort_by: params.get('sort_by') ?? '',
    state: params.get('state') ?? '',
    taskname: params.get('taskname') ?? '',
    workername: params.get('workername') ?? '',
    search: params.get('search') ?? '',
    received_start: params.get('received_start') ?? '',
    received_end: params.get('received_end') ?? '',
  }
  const stateSel = h(
    'select',
    { name: 'state', 'aria-label': 'state' },
    h('option', { value: '' }, 'All'),
    STATES.map((s) => h('option', { value: s, selected: q.state === s }, s)),
  )
  const nameSel = h('select', { name: 'taskname', 'aria-label': 'task name' }, h('option', { value: '' }, 'All'))
  const workerSel = h('select', { name: 'workername', 'aria-label': 'worker' }, h('option', { value: '' }, 'All'))
  const toLocal = (v) => v.replace(' ', 'T')
  const fromInput = h('input', {
    type: 'datetime-local',
    name: 'received_start',
    value: toLocal(q.received_start),
    'aria-label': 'received from',
  })
  const toInput = h('input', {
    type: 'datetime-local',
    name: 'received_end',
    value: toLocal(q.received_end),
    'aria-label': 'received until',
  })
  const search = h('input', {
    type: 'search',
    name: 'search',
    value: q.search,
    placeholder: 'id, args, kwargs, result… (state:FAILURE, kwargs:k=v)',
    size: 40,
    'aria-label': 'search',
  })
  const info = h('span')
  const tbody = h('tbody')
  const headRow = h('tr')
  const apply = () => {
    q.state = stateSel.value
    q.taskname = nameSel.value
    q.workername = workerSel.value
    q.search = search.value.trim()
    q.received_start = fromInput.value.replace('T', ' ')
    q.received_end = toInput.value.replace('T', ' ')
    q.offset = 0
    void load()
  }
  for (const el of [stateSel, nameSel, workerSel, fromInput, toInput]) el.addEventListener('change', apply)
  search.addEventListener('keydown', (e) => e.key === 'Enter' && apply())
  const prev = h(
    'button',
    {
      onclick: () => {
        q.offset = Math.max(0, q.offset - q.limit)
        void load()
      },
    },
    '‹ Prev',
  )
  const next = h(
    'button',
    {
      onclick: () => {
        q.offset += q.limit
        void load()
      },
    },
    'Next ›',
  )
  const size = h(
    'select',
    {
      'aria-label': 'page size',
      onchange: () => {
        q.limit = Number(size.value)
        q.offset = 0
        void load()
      },
    },
    [10, 25, 50, 100].map((n) => h('option', { value: n, selected: n === q.limit }, n)),
  )
  main.append(
    h('h1', {}, 'Tasks'),
    h(
      'div',
      { class: 'filters' },
      h('label', {}, 'State', stateSel),
      h('label', {}, 'Name', nameSel),
      h('label', {}, 'Worker', workerSel),
      h('label', {}, 'Received from', fromInput),
      h('label', {}, 'until', toInput),
      h('label', {}, 'Search', search),
      h('button', { class: 'primary', onclick: apply }, 'Apply'),
    ),
    h('table', { id: 'tasks' }, h('thead', {}, headRow), tbody),
    h('div', { class: 'pager' }, prev, next, size, info),
  )
  const drawHead = () => {
    const key = q.sort_by.replace(/^-/, '')
    headRow.replaceChildren(
      ...TASK_COLUMNS.map(([k, label]) =>
        h(
          'th',
          {
            class: `${SORTABLE.has(k) ? 'sortable' : ''} ${k === key ? `sorted${q.sort_by.startsWith('-') ? '' : ' asc'}` : ''}`,
            'data-col': k,
            onclick: SORTABLE.has(k)
              ? () => {
                  q.sort_by = q.sort_by === `-${k}` ? k : `-${k}`
                  q.offset = 0
                  void load()
                }
              : undefined,
          },
          label,
        ),
      ),
    )
  }
  const rows = new Map()
  const rowOf = (t) =>
    h(
      'tr',
      { 'data-uuid': t.uuid },
      h('td', {}, link(`/task/${encodeURIComponent(t.uuid)}`, t.uuid)),
      h('td', {}, t.name ?? ''),
      h('td', {}, stateBadge(t.state)),
      h('td', { title: text(t.args) }, text(t.args)),
      h('td', { title: text(t.kwargs) }, text(t.kwargs)),
      h('td', { title: text(t.result) }, text(t.result)),
      h('td', {}, fmtTime(t.received)),
      h('td', {}, fmtTime(t.started)),
      h('td', {}, fmtRuntime(t.runtime)),
      h('td', {}, t.worker ?? ''),
    )
  const fill = (sel, values, current) => {
    const keep = sel.value || current
    sel.replaceChildren(
      h('option', { value: '' }, 'All'),
      values.map((v) => h('option', { value: v, selected: v === keep }, v)),
    )
  }
  let loading = null
  const load = async () => {
    const params = new URLSearchParams()
    for (const [k, v] of Object.entries(q)) if (v !== '' && v !== null) params.set(k, String(v))
    history.replaceState(null, '', `${url('/tasks')}?${params}`)
    drawHead()
    let data
    try {
      data = await api(`/api/ui/tasks?${params}`)
    } catch (error) {
      info.textContent = error.message
      tbody.replaceChildren()
      return
    }
    fill(nameSel, data.taskTypes, q.taskname)
    fill(workerSel, data.workers, q.workername)
    rows.clear()
    tbody.replaceChildren(
      ...data.rows.map((t) => {
        const tr = rowOf(t)
        rows.set(t.uuid, tr)
        return tr
      }),
    )
    info.textContent = `${data.filtered === 0 ? 0 : q.offset + 1}–${Math.min(q.offset + q.limit, data.filtered)} of ${data.filtered} (${data.total} held)`
    prev.disabled = q.offset === 0
    next.disabled = q.offset + q.limit >= data.filtered
  }
  await load()
  // Rows on screen change in place; new tasks reload this one page, at most once a second.
  let lastReload = 0
  listeners.add((data) => {
    let reload = data.resync
    for (const t of data.tasks) {
      const tr = rows.get(t.uuid)
      if (tr) {
        const fresh = rowOf(t)
        tr.replaceWith(fresh)
        rows.set(t.uuid, fresh)
      } else if (q.offset === 0) reload = true
    }
    if (!reload) return
    const wait = Math.max(0, 1000 - (Date.now() - lastReload))
    loading ??= setTimeout(() => {
      loading = null
      lastReload = Date.now()
      void load()
    }, wait)
  })
  onLeave(() => loading && clearTimeout(loading))
}

async function taskPage(id) {
  const body = h('div')
  const out = h('div', { id: 'action-replies' })
  main.append(h('h1', {}, id), taskActions(id, out), out, body)
  const load = async () => {
    const data = await api(`/api/ui/task/${encodeURIComponent(id)}`)
    const t = data.task
    const fields = Object.entries(t).filter(([k]) => !['traceback', 'children'].includes(k))
    const ref = (r) =>
      r
        ? h('span', {}, link(`/task/${encodeURIComponent(r.uuid)}`, r.uuid), ' ', r.name ?? '', ' ', r.state ? stateBadge(r.state) : '')
        : '—'
    body.replaceChildren(
      h(
        'div',
        { class: 'grid' },
        h(
          'div',
          { class: 'card' },
          h('h2', {}, 'Fields'),
          h(
            'table',
            { class: 'kv', id: 'task-fields' },
            h(
              'tbody',
              {},
              fields.map(([k, v]) =>
                h(
                  'tr',
                  {},
                  h('td', {}, k),
                  h(
                    'td',
                    { class: 'wrap', 'data-field': k },
                    k === 'state'
                      ? stateBadge(v)
                      : ['received', 'sent', 'started', 'succeeded', 'failed', 'retried', 'revoked', 'rejected', 'timestamp'].includes(k) &&
                          typeof v === 'number'
                        ? fmtTime(v)
                        : text(v),
                  ),
                ),
              ),
            ),
          ),
        ),
        h(
          'div',
          {},
          h(
            'div',
            { class: 'card' },
            h('h2', {}, 'Timeline'),
            h(
              'ul',
              { class: 'timeline', id: 'timeline' },
              data.timeline.map((e) => h('li', {}, `${fmtTime(e.timestamp)} — ${e.type}${e.hostname ? ` on ${e.hostname}` : ''}`)),
            ),
          ),
          h(
            'div',
            { class: 'card' },
            h('h2', {}, 'Workflow'),
            h('p', {}, 'Parent: ', ref(data.parent)),
            h('p', {}, 'Root: ', ref(data.root)),
            h('p', {}, 'Children: ', data.children.length ? '' : '—'),
            h(
              'ul',
              {},
              data.children.map((c) => h('li', {}, ref(c))),
            ),
            data.family.length > 1
              ? h(
                  'ul',
                  { class: 'tree', id: 'family' },
                  data.family.map((f) =>
                    h(
                      'li',
                      { style: `padding-left:${f.depth * 18}px` },
                      f.depth ? '└ ' : '',
                      f.uuid === id ? h('strong', {}, f.uuid) : link(`/task/${encodeURIComponent(f.uuid)}`, f.uuid),
                      ' ',
                      f.name ?? '',
                      ' ',
                      f.state ? stateBadge(f.state) : '',
                    ),
                  ),
                )
              : '',
          ),
        ),
      ),
      t.traceback ? h('div', { class: 'card' }, h('h2', {}, 'Traceback'), h('pre', { id: 'traceback' }, t.traceback)) : '',
    )
  }
  await load()
  listeners.add((data) => {
    if (data.tasks.some((t) => t.uuid === id)) void load()
  })
}

function taskActions(id, out) {
  const signal = h(
    'select',
    { 'aria-label': 'signal' },
    ['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGUSR1', 'SIGQUIT'].map((s) => h('option', { value: s }, s)),
  )
  const act = async (label, fn) => {
    if (!window.confirm(`${label} ${id}?`)) return
    try {
      const result = await fn()
      out.replaceChildren(h('h2', {}, label), result.replies ? repliesView(result.replies) : h('p', {}, text(result.message ?? result)))
    } catch (error) {
      out.replaceChildren(h('p', { class: 'offline' }, `${label} failed: ${error.message}`))
    }
  }
  return h(
    'div',
    { class: 'actions' },
    h(
      'button',
      {
        id: 'revoke',
        onclick: () => act('Revoke', () => post('/api/ui/control/revoke', { arguments: { task_id: id, terminate: false } })),
      },
      'Revoke',
    ),
    h(
      'span',
      {},
      h(
        'button',
        {
          id: 'terminate',
          class: 'danger',
          onclick: () =>
            act('Terminate', () => post('/api/ui/control/revoke', { arguments: { task_id: id, terminate: true, signal: signal.value } })),
        },
        'Terminate',
      ),
      ' with ',
      signal,
    ),
    h(
      'button',
      {
        id: 'retry',
        onclick: () =>
          act('Retry', async () => {
            const r = await post(`/api/ui/retry/${encodeURIComponent(id)}`)
            return { message: `Sent again as ${r['task-id']}` }
          }),
      },
      'Retry',
    ),
  )
}

// ---- queues and overview ------------------------------------------------------

function chart(el, title, series, data) {
  el.replaceChildren()
  if (!window.uPlot) return el.append(h('p', { class: 'muted' }, 'chart library not loaded'))
  const width = Math.max(320, el.clientWidth || 600)
  return new window.uPlot(
    {
      title,
      width,
      height: 220,
      scales: { x: { time: true } },
      series: [
        {},
        ...series.map((s, i) => ({ label: s, stroke: ['#1d8a4a', '#c23b33', '#2f6fde', '#b7791f', '#7a4fd6'][i % 5], width: 1.5 })),
      ],
    },
    data,
    el,
  )
}

async function queuesPage() {
  const tbody = h('tbody')
  const charts = h('div', { class: 'grid' })
  main.append(
    h('h1', {}, 'Queues'),
    h(
      'table',
      { id: 'queues' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Queue'), h('th', {}, 'Messages'), h('th', {}, 'Consumers'), h('th', {}, 'Sampled'))),
      tbody,
    ),
    h('h2', {}, 'Depth over time'),
    charts,
  )
  const load = async () => {
    const data = await api('/api/ui/overview')
    const entries = Object.entries(data.queues)
    tbody.replaceChildren(
      ...entries.map(([name, samples]) => {
        const last = samples[samples.length - 1] ?? {}
        return h(
          'tr',
          { 'data-queue': name },
          h('td', {}, name),
          h('td', {}, last.messages ?? ''),
          h('td', {}, last.consumers ?? 'n/a'),
          h('td', {}, fmtTime(last.at)),
        )
      }),
    )
    charts.replaceChildren()
    for (const [name, samples] of entries) {
      const el = h('div', { class: 'card chart' })
      charts.append(el)
      chart(
        el,
        name,
        ['messages', 'consumers'],
        [samples.map((s) => s.at), samples.map((s) => s.messages), samples.map((s) => s.consumers)],
      )
    }
  }
  await load()
  const timer = setInterval(() => void load(), 5000)
  onLeave(() => clearInterval(timer))
}

async function overviewPage() {
  const tp = h('div', { class: 'card chart', id: 'chart-throughput' })
  const rt = h('div', { class: 'card chart', id: 'chart-runtime' })
  const qd = h('div', { class: 'card chart', id: 'chart-queues' })
  main.append(h('h1', {}, 'Overview'), h('div', { class: 'grid' }, tp, rt, qd))
  const load = async () => {
    const data = await api('/api/ui/overview')
    const t = data.throughput
    chart(tp, 'Tasks per second', ['succeeded', 'failed'], [t.map((s) => s.at), t.map((s) => s.succeeded), t.map((s) => s.failed)])
    chart(
      rt,
      'Runtime percentiles (s)',
      ['p50', 'p95', 'p99'],
      [t.map((s) => s.at), t.map((s) => s.p50), t.map((s) => s.p95), t.map((s) => s.p99)],
    )
    const queues = Object.entries(data.queues)
    const times = [...new Set(queues.flatMap(([, s]) => s.map((x) => x.at)))].sort((a, b) => a - b)
    chart(
      qd,
      'Queue depth',
      queues.map(([n]) => n),
      [
        times,
        ...queues.map(([, s]) => {
          const m = new Map(s.map((x) => [x.at, x.messages]))
          return times.map((at) => m.get(at) ?? null)
        }),
      ],
    )
  }
  await load()
  const timer = setInterval(() => void load(), 5000)
  onLeave(() => clearInterval(timer))
}

/** The nav shows a feature's page only where the feature is present. */
async function showFeatures() {
  const present = await api('/api/ui/features').catch(() => ({}))
  for (const a of document.querySelectorAll('header nav a[data-feature]')) a.hidden = !present[a.dataset.feature]
}

connectStream()
void showFeatures()
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', route)
else route()
