// The pages of tsq's other features, shown where present: the events bus's
// archive, task locks and beat's schedule. Each action is asked first, its
// answer (or refusal) shown under the table.
import { api, h, link, main, onLeave, post, text, toast } from './lib.js'

/** Each of these pages' actions: asked first, the answer (or the refusal) shown under the table. */
async function confirmed(question, out, label, fn, after) {
  if (!window.confirm(question)) return
  try {
    const result = await fn()
    out.replaceChildren(h('h2', {}, label), h('pre', { class: 'reply' }, JSON.stringify(result, null, 2)))
  } catch (error) {
    out.replaceChildren(h('p', { class: 'offline' }, `${label} failed: ${error.message}`))
  }
  await after()
}

const cells = (values) =>
  values.map((v) => h('td', { class: typeof v === 'string' && v.length > 60 ? 'wrap' : undefined }, v instanceof Node ? v : text(v)))

export async function archivePage() {
  const services = h('tbody')
  const events = h('tbody')
  const out = h('div', { id: 'action-replies' })
  main.append(
    h('h1', {}, 'Events archive'),
    h(
      'p',
      { class: 'muted' },
      'Events whose handler failed past its retries (tsq archive). Replay sends them back to their handler queue with the retry count reset.',
    ),
    h(
      'table',
      { id: 'archive-services' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Service', 'Archived', ''].map((c) => h('th', {}, c)),
        ),
      ),
      services,
    ),
    out,
    h('h2', {}, 'Archived events'),
    h(
      'table',
      { id: 'archive' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['id', 'Service', 'Event', 'First failure', 'Retries', 'Last error', ''].map((c) => h('th', {}, c)),
        ),
      ),
      events,
    ),
  )
  const load = async () => {
    const data = await api('/api/ui/archive')
    services.replaceChildren(
      ...data.services.map((s) =>
        h(
          'tr',
          { 'data-service': s.service },
          cells([s.service, s.archived]),
          h(
            'td',
            {},
            h(
              'button',
              {
                class: 'primary',
                'data-action': 'replay-all',
                disabled: s.archived === 0,
                onclick: () =>
                  confirmed(
                    `Replay every archived event of ${s.service}?`,
                    out,
                    `Replay all (${s.service})`,
                    () => post(`/api/ui/archive/replay/${encodeURIComponent(s.service)}`, { all: true }),
                    load,
                  ),
              },
              'Replay all',
            ),
          ),
        ),
      ),
    )
    events.replaceChildren(
      ...(data.events.length
        ? data.events.map((e) =>
            h(
              'tr',
              { 'data-id': e.id },
              cells([e.id, e.service, e.event, e.firstFailure ?? '—', e.retries ?? '—', (e.lastError ?? e.reason ?? '—').split('\n')[0]]),
              h(
                'td',
                {},
                h(
                  'button',
                  {
                    'data-action': 'replay',
                    onclick: () =>
                      confirmed(
                        `Replay ${e.event} ${e.id} to ${e.service}?`,
                        out,
                        `Replay ${e.id}`,
                        () => post(`/api/ui/archive/replay/${encodeURIComponent(e.service)}`, { ids: [e.id] }),
                        load,
                      ),
                  },
                  'Replay',
                ),
              ),
            ),
          )
        : [h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No archived events.'))]),
    )
  }
  await load()
}

export async function locksPage() {
  const tbody = h('tbody')
  const where = h('p', { class: 'muted' })
  const detail = h('div', { id: 'lock-detail' })
  const out = h('div', { id: 'action-replies' })
  main.append(
    h('h1', {}, 'Task locks'),
    where,
    h(
      'table',
      { id: 'locks' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Lock id', 'Task', 'Holder', 'Task id', 'Age', 'Lease left', 'Token', ''].map((c) => h('th', {}, c)),
        ),
      ),
      tbody,
    ),
    detail,
    out,
  )
  const show = async (id) => {
    const row = await api(`/api/ui/lock/${encodeURIComponent(id)}`)
    detail.replaceChildren(
      h('h2', {}, id),
      h(
        'table',
        { class: 'kv', id: 'lock-fields' },
        h(
          'tbody',
          {},
          Object.entries(row).map(([k, v]) => h('tr', {}, h('td', {}, k), h('td', { 'data-field': k }, text(v)))),
        ),
      ),
    )
  }
  const load = async () => {
    const data = await api('/api/ui/locks')
    where.replaceChildren(
      `Held now in ${data.store} (tsq locks). Removing a lock frees it whoever holds it; the holder's task is told at its next renewal.`,
    )
    tbody.replaceChildren(
      ...(data.locks.length
        ? data.locks.map((l) =>
            h(
              'tr',
              { 'data-id': l.id },
              cells([
                l.id,
                l.task ?? '—',
                `${l.node} (pid ${l.pid})`,
                l.taskId ? link(`/task/${encodeURIComponent(l.taskId)}`, l.taskId) : '—',
                `${l.ageS} s`,
                `${l.leftS} s of ${l.leaseS} s`,
                l.token,
              ]),
              h(
                'td',
                {},
                h('button', { 'data-action': 'show', onclick: () => void show(l.id).catch((error) => toast(error.message)) }, 'Show'),
                ' ',
                h(
                  'button',
                  {
                    class: 'danger',
                    'data-action': 'rm',
                    onclick: () =>
                      confirmed(
                        `Free lock ${l.id}? Another run of its task may start while the holder still runs.`,
                        out,
                        `Remove ${l.id}`,
                        () => post(`/api/ui/lock/rm/${encodeURIComponent(l.id)}`),
                        load,
                      ),
                  },
                  'Remove',
                ),
              ),
            ),
          )
        : [h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No locks held.'))]),
    )
  }
  await load()
  // Leases run down and locks come and go with the tasks: a small list, read again every few seconds.
  const timer = setInterval(() => void load().catch(() => undefined), 3000)
  onLeave(() => clearInterval(timer))
}

export async function schedulePage() {
  const tbody = h('tbody')
  const where = h('p', { class: 'muted' })
  const detail = h('div', { id: 'entry-detail' })
  const out = h('div', { id: 'action-replies' })
  const form = entryForm(out, () => load())
  main.append(
    h('h1', {}, 'Beat schedule'),
    where,
    h(
      'table',
      { id: 'schedule' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Name', 'Task', 'Schedule', 'Enabled', 'Runs', 'Last run', 'Next run', ''].map((c) => h('th', {}, c)),
        ),
      ),
      tbody,
    ),
    form.el,
    detail,
    out,
  )
  const show = async (name) => {
    const row = await api(`/api/ui/schedule/${encodeURIComponent(name)}`)
    detail.replaceChildren(
      h('h2', {}, name),
      h(
        'table',
        { class: 'kv', id: 'entry-fields' },
        h(
          'tbody',
          {},
          Object.entries(row).map(([k, v]) => h('tr', {}, h('td', {}, k), h('td', { class: 'wrap', 'data-field': k }, text(v)))),
        ),
      ),
    )
  }
  const load = async () => {
    const data = await api('/api/ui/schedule')
    where.replaceChildren(`Entries in ${data.store} (tsq schedule). Running beats follow a change within their loop interval.`)
    const at = (iso) => (iso ? new Date(iso).toLocaleString() : '—')
    tbody.replaceChildren(
      ...(data.entries.length
        ? data.entries.map((e) => {
            const verb = e.enabled ? 'disable' : 'enable'
            return h(
              'tr',
              { 'data-name': e.name },
              cells([e.name, e.task, e.schedule, e.enabled ? 'yes' : 'no', e.total_run_count, at(e.last_run_at), at(e.next_run_at)]),
              h(
                'td',
                {},
                h('button', { 'data-action': 'show', onclick: () => void show(e.name).catch((error) => toast(error.message)) }, 'Show'),
                ' ',
                h('button', { 'data-action': 'change', onclick: () => form.change(e) }, 'Change'),
                ' ',
                h(
                  'button',
                  {
                    'data-action': verb,
                    onclick: () =>
                      confirmed(
                        `${e.enabled ? 'Disable' : 'Enable'} ${e.name}?`,
                        out,
                        `${e.enabled ? 'Disable' : 'Enable'} ${e.name}`,
                        () => post(`/api/ui/schedule/${verb}/${encodeURIComponent(e.name)}`),
                        load,
                      ),
                  },
                  e.enabled ? 'Disable' : 'Enable',
                ),
                ' ',
                h(
                  'button',
                  {
                    class: 'danger',
                    'data-action': 'rm',
                    onclick: () =>
                      confirmed(
                        `Remove ${e.name} from the schedule?`,
                        out,
                        `Remove ${e.name}`,
                        () => post(`/api/ui/schedule/rm/${encodeURIComponent(e.name)}`),
                        load,
                      ),
                  },
                  'Remove',
                ),
              ),
            )
          })
        : [h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No entries.'))]),
    )
  }
  await load()
}

/**
 * The fields of `tsq schedule add` (a new entry) and `tsq schedule set` (an
 * entry changed: only the fields edited are sent, as only the flags given
 * change it, so an unchanged interval keeps its relative flag).
 */
function entryForm(out, after) {
  const input = (name, attrs = {}) => h('input', { name, 'aria-label': name, ...attrs })
  const f = {
    name: input('name', { required: true, size: 16 }),
    task: input('task', { placeholder: 'proj.add', size: 18 }),
    kind: h(
      'select',
      { name: 'kind', 'aria-label': 'schedule kind' },
      h('option', { value: 'every' }, 'every (seconds)'),
      h('option', { value: 'cron' }, "crontab 'm h dom mon dow'"),
    ),
    when: input('when', { size: 16 }),
    relative: input('relative', { type: 'checkbox' }),
    args: input('args', { placeholder: '[]', size: 14 }),
    kwargs: input('kwargs', { placeholder: '{}', size: 14 }),
    queue: input('queue', { placeholder: 'celery', size: 10 }),
    priority: input('priority', { type: 'number', size: 4 }),
    expires: input('expires', { placeholder: 'seconds', size: 8 }),
  }
  const title = h('h2', {})
  const submit = h('button', { class: 'primary', type: 'submit', 'data-action': 'save' })
  const cancel = h('button', { type: 'button', 'data-action': 'cancel', onclick: () => reset() }, 'Cancel')
  const label = (text, el) => h('label', {}, text, el)
  const el = h(
    'form',
    { id: 'entry-form' },
    title,
    h(
      'div',
      { class: 'filters' },
      label('Name', f.name),
      label('Task', f.task),
      label('Schedule', f.kind),
      label('Every / crontab', f.when),
      label('Relative', f.relative),
      label('Args (JSON array)', f.args),
      label('Kwargs (JSON object)', f.kwargs),
      label('Queue', f.queue),
      label('Priority', f.priority),
      label('Expires', f.expires),
      submit,
      cancel,
    ),
  )
  let editing = null
  const shown = {}
  const fill = (values) => {
    for (const [k, v] of Object.entries(values)) {
      if (k === 'relative') f.relative.checked = v
      else f[k].value = v
      shown[k] = v
    }
  }
  const reset = () => {
    editing = null
    title.textContent = 'Add an entry'
    submit.textContent = 'Add'
    f.name.disabled = false
    f.when.placeholder = '3600'
    fill({ name: '', task: '', kind: 'every', when: '', relative: false, args: '', kwargs: '', queue: '', priority: '', expires: '' })
    cancel.hidden = true
  }
  // The entry's fields as they are; the schedule is left blank (its text is
  // Celery's description, not what was typed) and kept unless one is typed.
  const change = (e) => {
    editing = e.name
    title.textContent = `Change ${e.name}`
    submit.textContent = 'Save'
    f.name.disabled = true
    f.when.placeholder = `unchanged: ${e.schedule}`
    fill({
      name: e.name,
      task: e.task,
      kind: 'every',
      when: '',
      relative: false,
      args: JSON.stringify(e.args),
      kwargs: JSON.stringify(e.kwargs),
      queue: e.options.queue ?? '',
      priority: e.options.priority ?? '',
      expires: e.options.expires ?? '',
    })
    cancel.hidden = false
    f.task.focus()
  }
  const fields = () => {
    const body = {}
    const edited = (k) => editing === null || String(f[k].value) !== String(shown[k])
    for (const k of ['task', 'args', 'kwargs', 'queue', 'expires']) if (f[k].value.trim() !== '' && edited(k)) body[k] = f[k].value.trim()
    if (f.priority.value.trim() !== '' && edited('priority')) body.priority = Number(f.priority.value)
    if (f.when.value.trim() !== '') {
      body[f.kind.value] = f.when.value.trim()
      if (f.kind.value === 'every') body.relative = f.relative.checked
    }
    return body
  }
  el.addEventListener('submit', (event) => {
    event.preventDefault()
    const name = editing ?? f.name.value.trim()
    if (!name) return toast('An entry needs a name')
    const body = fields()
    const verb = editing === null ? 'add' : 'set'
    const what =
      Object.entries(body)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ') || 'nothing'
    void confirmed(
      `${verb === 'add' ? 'Add' : 'Change'} ${name}: ${what}?`,
      out,
      `${verb === 'add' ? 'Add' : 'Change'} ${name}`,
      () => post(`/api/ui/schedule/${verb}/${encodeURIComponent(name)}`, body),
      async () => {
        if (!out.querySelector('.offline')) reset()
        await after()
      },
    )
  })
  reset()
  return { el, change }
}
