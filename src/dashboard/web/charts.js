// The queues page (each queue's depth and consumers, sampled by the server)
// and the overview's charts (throughput, runtime percentiles, queue depth),
// drawn with uPlot and redrawn every few seconds.
import { api, fmtTime, h, main, onLeave } from './lib.js'
import { takeInitial } from './live.js'

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

/** Draws the overview samples the page came with (or asks for them), then again every 5 s until the page is left. */
async function drawAndPoll(show) {
  const load = async () => show(await api('/api/ui/overview'))
  const first = takeInitial('overview')
  if (first) show(first)
  else await load()
  const timer = setInterval(() => void load(), 5000)
  onLeave(() => clearInterval(timer))
}

export async function queuesPage() {
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
  const show = (data) => {
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
  await drawAndPoll(show)
}

export async function overviewPage() {
  const tp = h('div', { class: 'card chart', id: 'chart-throughput' })
  const rt = h('div', { class: 'card chart', id: 'chart-runtime' })
  const qd = h('div', { class: 'card chart', id: 'chart-queues' })
  main.append(h('h1', {}, 'Overview'), h('div', { class: 'grid' }, tp, rt, qd))
  const show = (data) => {
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
  await drawAndPoll(show)
}
