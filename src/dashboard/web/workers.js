// The workers page (every worker's row, kept live by the stream) and a
// worker's page (its inspect replies, and the actions of Celery's remote
// control: each asks first and shows every node's reply).
import { api, fmtAgo, fmtTime, h, link, main, onLeave, post, repliesView } from './lib.js'
import { listeners, takeInitial } from './live.js'

export async function workersPage() {
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
  const show = (data) => {
    workers.clear()
    for (const w of data.workers) workers.set(w.hostname, w)
    draw()
  }
  const load = async () => show(await api('/api/ui/workers'))
  // The rows the page came with are drawn before anything is asked.
  const first = takeInitial('workers')
  if (first) show(first)
  else await load()
  listeners.add((data) => {
    if (data.resync) return void load()
    for (const w of data.workers) workers.set(w.hostname, w)
    if (data.workers.length) draw()
  })
  const timer = setInterval(draw, 2000)
  onLeave(() => clearInterval(timer))
}

export async function workerPage(name) {
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
