// The tasks page (filters, Flower's search, sorting and paging on the
// server; rows on screen kept live by the stream) and a task's page (its
// fields, timeline and workflow; revoke, terminate, retry).
import { api, fmtRuntime, fmtTime, h, link, main, onLeave, post, repliesView, stateBadge, STATES, text, url } from './lib.js'
import { listeners, takeInitial } from './live.js'

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

export async function tasksPage() {
  const params = new URLSearchParams(location.search)
  const q = {
    // 25 a page unless the address says: as the page's first rows were chosen (initial-state.ts).
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
  // The address says the query, so a reload or a shared link shows the same page of rows.
  const query = () => {
    const params = new URLSearchParams()
    for (const [k, v] of Object.entries(q)) if (v !== '' && v !== null) params.set(k, String(v))
    history.replaceState(null, '', `${url('/tasks')}?${params}`)
    drawHead()
    return params
  }
  const load = async () => {
    const params = query()
    let data
    try {
      data = await api(`/api/ui/tasks?${params}`)
    } catch (error) {
      info.textContent = error.message
      tbody.replaceChildren()
      return
    }
    show(data)
  }
  const show = (data) => {
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
  // The rows the page came with (for this same query) are drawn before anything is asked.
  const first = takeInitial('tasks')
  if (first) {
    query()
    show(first)
  } else await load()
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

export async function taskPage(id) {
  const body = h('div')
  const out = h('div', { id: 'action-replies' })
  const why = h('div', { class: 'card', id: 'why' })
  main.append(h('h1', {}, id), why, taskActions(id, out), out, body)
  void whyCard(id, why)
  const load = async () => {
    let data
    try {
      data = await api(`/api/ui/task/${encodeURIComponent(id)}`)
    } catch (error) {
      // A task no event told the dashboard of: the answer above still says where it is.
      if (!String(error.message).startsWith('404')) throw error
      body.replaceChildren(h('p', { id: 'no-events' }, 'No event of this task has reached the dashboard.'))
      return
    }
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

/** `tsq why`'s answer: one line, then the evidence, source by source; asked again on demand. */
async function whyCard(id, card) {
  const again = h('button', { id: 'why-again', onclick: () => void whyCard(id, card) }, 'Ask again')
  card.replaceChildren(h('h2', {}, 'Where is it? ', again), h('p', {}, 'Asking the backend, the workers and the broker…'))
  try {
    const w = await api(`/api/ui/why/${encodeURIComponent(id)}`)
    card.replaceChildren(
      h('h2', {}, 'Where is it? ', again),
      h('p', { id: 'why-summary', 'data-state': w.state }, h('strong', {}, w.summary)),
      h(
        'ul',
        { id: 'why-evidence' },
        w.evidence.map((line) => h('li', {}, line)),
      ),
    )
  } catch (error) {
    card.replaceChildren(h('h2', {}, 'Where is it? ', again), h('p', { class: 'offline' }, `Could not ask: ${error.message}`))
  }
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
