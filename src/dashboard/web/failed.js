// The failed-task page (`tsq failed` on the dashboard): the failures the
// result backend holds, the messages tsq workers kept of them, and those the
// events told of, filtered as `tsq failed ls` filters them. A retry sends the
// task again exactly (its kept message, or result_extended's exact
// arguments) or shows why it cannot; retrying more than one asks first.
import { api, h, link, main, post, text } from './lib.js'

const FILTERS = [
  ['task', 'Task (proj.*)'],
  ['exception', 'Exception'],
  ['worker', 'Worker'],
  ['since', 'Since (2h, ISO)'],
  ['until', 'Until'],
]

export async function failedPage() {
  const inputs = Object.fromEntries(FILTERS.map(([name, label]) => [name, h('input', { name, placeholder: label, size: 14 })]))
  const tbody = h('tbody')
  const out = h('div', { id: 'action-replies' })
  const where = h('p', { class: 'muted' })
  let shown = []
  const retry = async (ids) => {
    if (ids.length > 1 && !window.confirm(`Send ${ids.length} failed tasks again?`)) return
    try {
      const r = await post('/api/ui/failed/retry', { ids })
      out.replaceChildren(
        h('h2', {}, `Retried ${r.retried.length}, refused ${r.refused.length}`),
        h('pre', { class: 'reply', 'data-result': 'retry' }, JSON.stringify(r, null, 2)),
      )
    } catch (error) {
      out.replaceChildren(h('p', { class: 'offline' }, `Retry failed: ${error.message}`))
    }
    await load()
  }
  const load = async () => {
    const params = new URLSearchParams()
    for (const [name, input] of Object.entries(inputs)) if (input.value.trim()) params.set(name, input.value.trim())
    const data = await api(`/api/ui/failed?${params}`)
    shown = data.tasks
    where.replaceChildren(
      data.backend
        ? `${shown.length} failed task(s). Replay "message": the kept message, sent again as it was (same id); "arguments": a new task with result_extended's exact arguments; —: cannot be sent again exactly.`
        : 'No result backend (--result-backend): only the failures events told of, and none can be sent again exactly.',
    )
    tbody.replaceChildren(
      ...(shown.length
        ? shown.map((t) =>
            h(
              'tr',
              { 'data-id': t.taskId },
              h('td', {}, link(`/task/${encodeURIComponent(t.taskId)}`, t.taskId)),
              ...[
                t.task ?? '—',
                (t.exception ?? '—').split('\n')[0],
                t.worker ?? '—',
                t.failedAt ?? '—',
                t.replay ?? '—',
                t.sources.join(', '),
              ].map((v) => h('td', {}, text(v))),
              h('td', {}, h('button', { 'data-action': 'retry', disabled: !t.replay, onclick: () => retry([t.taskId]) }, 'Retry')),
            ),
          )
        : [h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No failed tasks.'))]),
    )
  }
  main.append(
    h('h1', {}, 'Failed tasks'),
    h(
      'form',
      {
        id: 'failed-filters',
        onsubmit: (e) => {
          e.preventDefault()
          void load()
        },
      },
      ...Object.values(inputs),
      ' ',
      h('button', { type: 'submit' }, 'Filter'),
      ' ',
      h(
        'button',
        {
          type: 'button',
          class: 'primary',
          'data-action': 'retry-shown',
          onclick: () => retry(shown.filter((t) => t.replay).map((t) => t.taskId)),
        },
        'Retry all shown',
      ),
    ),
    where,
    h(
      'table',
      { id: 'failed' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['id', 'Task', 'Exception', 'Worker', 'Failed at', 'Replay', 'Seen in', ''].map((c) => h('th', {}, c)),
        ),
      ),
      tbody,
    ),
    out,
  )
  await load()
}
