// `tsq events` in a terminal: Celery's curses monitor (celery/events/cursesmon.py)
// as a full-screen view, redrawn as events arrive: the latest tasks (uuid,
// worker, task, time, state, laid out by Celery's format_row), the selected
// task's fields, the workers online, and the counts. j/k move the selection,
// c revokes the selected task (Celery's key too); q or Ctrl-C quits. What it
// shows is read from the cluster state (cluster-state/), as Celery's monitor
// reads events.State: the dashboard keeps the same model.
//
// Drawn with three ANSI sequences (alternate screen, clear, cursor on/off)
// rather than a TUI library: the view is one screen of plain lines redrawn
// whole, which is all a library's renderer would be used for here.
import { withTransport, EventReceiver } from '../../client/index.js'
import { ClusterState, workerAlive, type TaskRecord } from '../../cluster-state/index.js'
import { escapeControl } from '../../protocol/index.js'
import { MailboxClient, type NodeReply, type TransportSettings } from '../../transport/index.js'

const UUID_WIDTH = 36
const STATE_WIDTH = 8
const TIMESTAMP_WIDTH = 8
const MIN_WORKER_WIDTH = 15
const MIN_TASK_WIDTH = 16
const LEFT_OFFSET = 3
/** Rows that are not task rows: title, blank, header above; rule, selection, workers, info, keys below. */
const CHROME_ROWS = 9

/** Celery's State keeps this many tasks (events.state max_tasks_in_memory). */
const MAX_TASKS = 10_000

/** The fields Celery's Task.info() shows for a selected task, in its order. */
const INFO_FIELDS = [
  'args',
  'kwargs',
  'retries',
  'result',
  'eta',
  'runtime',
  'expires',
  'exception',
  'exchange',
  'routing_key',
  'root_id',
  'parent_id',
]

/** A task as the monitor shows it: one row, and its fields once selected. */
export interface MonitoredTask {
  uuid: string
  name: string | null
  /** The worker that last handled it (Celery's task.worker), null while only sent. */
  hostname: string | null
  state: string
  /** The last event's timestamp, unix seconds. */
  timestamp: number
  /** Celery's Task.info(): the INFO_FIELDS it has, in that order. */
  fields: Record<string, unknown>
}

/** What Celery's curses monitor reads of the cluster state (cluster-state/, the dashboard's too). */
export class ClusterView {
  /** Every event handed over, as Celery's State.event_count counts them (the state counts the ones it keeps). */
  eventCount = 0
  readonly state = new ClusterState({ maxTasks: MAX_TASKS })

  apply(event: Record<string, unknown>): void {
    this.eventCount += 1
    this.state.apply(event)
  }

  task(uuid: string): MonitoredTask | undefined {
    const task = this.state.tasks.get(uuid)
    return task && monitored(task)
  }

  get taskCount(): number {
    return this.state.tasks.size
  }

  /** Celery's Worker.alive: a heartbeat within two intervals. */
  aliveWorkers(now: number): string[] {
    return [...this.state.workers.values()]
      .filter((w) => workerAlive(w, now))
      .map((w) => w.hostname)
      .sort()
  }

  get workerCount(): number {
    return this.state.workers.size
  }

  /** The latest first, as Celery's tasks_by_time: the state's own default order, one page of it. */
  latestTasks(limit: number): MonitoredTask[] {
    return this.state.queryTasks({ limit: Math.max(0, limit), count: false }).tasks.map(monitored)
  }
}

function monitored(task: TaskRecord): MonitoredTask {
  const f = task.fields
  const fields: Record<string, unknown> = {}
  for (const field of INFO_FIELDS) if (f[field] !== undefined && f[field] !== null) fields[field] = f[field]
  return {
    uuid: task.uuid,
    name: typeof f.name === 'string' ? f.name : null,
    hostname: task.worker,
    state: task.state,
    timestamp: typeof f.timestamp === 'number' ? f.timestamp : 0,
    fields,
  }
}

/** celery.utils.text.abbr */
function abbr(text: string | null, max: number, ellipsis = '...'): string {
  if (text === null) return '???'
  if (max <= 0) return ''
  if (text.length <= max) return text
  return max > ellipsis.length ? `${text.slice(0, max - ellipsis.length)}${ellipsis}` : text.slice(0, max)
}

/** celery.utils.text.abbrtask: the module is shortened, the task's own name kept. */
function abbrtask(name: string | null, max: number): string {
  if (name === null) return '???'
  if (name.length <= max) return name
  const dot = name.lastIndexOf('.')
  const module = name.slice(0, Math.max(0, dot))
  const own = name.slice(dot + 1)
  return `${module.slice(0, Math.max(0, max - own.length - 3))}[.]${own}`
}

/** Celery's CursesMonitor.format_row: the widths follow the screen; note that WORKER comes before TASK. */
export function formatRow(
  displayWidth: number,
  uuid: string,
  task: string | null,
  worker: string | null,
  time: string,
  state: string,
): string {
  let detailWidth = displayWidth - 1 - STATE_WIDTH - 1 - TIMESTAMP_WIDTH
  const uuidSpace = detailWidth - 1 - MIN_TASK_WIDTH - 1 - MIN_WORKER_WIDTH
  const uuidWidth = Math.max(0, Math.min(uuidSpace, UUID_WIDTH))
  detailWidth = detailWidth - uuidWidth - 1
  const taskWidth = Math.max(0, Math.ceil(detailWidth / 2))
  const workerWidth = Math.max(0, detailWidth - taskWidth - 1)
  // Values from events are escaped (a newline or an ESC in a task name would break or repaint the screen).
  uuid = escapeControl(uuid)
  task = task === null ? null : escapeControl(task)
  worker = worker === null ? null : escapeControl(worker)
  const row = `${abbr(uuid, uuidWidth).padEnd(uuidWidth)} ${abbr(worker, workerWidth).padEnd(workerWidth)} ${abbrtask(task, taskWidth).padEnd(taskWidth)} ${time.padEnd(TIMESTAMP_WIDTH)} ${abbr(state, STATE_WIDTH).padEnd(STATE_WIDTH)} `
  return row.slice(0, Math.max(0, displayWidth))
}

function infoOf(task: MonitoredTask): string {
  return Object.entries(task.fields)
    .map(([key, value]) => {
      if (key === 'runtime' && typeof value === 'number') return `${key}=${value.toFixed(2)}`
      const text = typeof value === 'string' ? value : JSON.stringify(value)
      return `${escapeControl(key)}=${escapeControl(key === 'result' ? abbr(text, 16) : text)}`
    })
    .join(' ')
}

export interface ScreenOptions {
  width: number
  height: number
  /** Unix seconds: which workers count as alive. */
  now: number
  selected: string | null
  greet: string
  /** A remote-control outcome shown where the selected task's fields go, for a while. */
  notice?: string | null
}

/** How many task rows fit on a screen this tall. */
export function taskRows(height: number): number {
  return Math.max(0, height - CHROME_ROWS)
}

/** One screen of text, top to bottom, as Celery's monitor lays it out. */
export function renderScreen(view: ClusterView, o: ScreenOptions): string[] {
  const width = Math.max(20, o.width)
  const displayWidth = width - LEFT_OFFSET - 1
  const pad = ' '.repeat(LEFT_OFFSET)
  const fit = (line: string) => `${pad}${line}`.slice(0, width)
  const lines = [fit(o.greet), '', fit(formatRow(displayWidth, 'UUID', 'TASK', 'WORKER', 'TIME', 'STATE'))]
  for (const task of view.latestTasks(taskRows(o.height))) {
    const time = new Date(task.timestamp * 1000).toISOString().slice(11, 19)
    const row = formatRow(displayWidth, task.uuid, task.name, task.hostname ?? '*NONE*', time, task.state)
    // The row fits already; the highlight's escapes must not count towards the width.
    lines.push(task.uuid === o.selected ? `${pad}\x1b[7m${row}\x1b[0m` : fit(row))
  }
  // The footer sits on the screen's last rows, as in Celery's.
  while (lines.length < o.height - 6) lines.push('')
  const selected = o.selected ? view.task(o.selected) : undefined
  const workers = view.aliveWorkers(o.now)
  lines.push(
    fit('─'.repeat(Math.max(0, width - LEFT_OFFSET - 4))),
    fit(
      o.notice
        ? abbr(o.notice, displayWidth)
        : selected
          ? abbr(`Selected: ${infoOf(selected) || 'Missing extended info'}`, displayWidth)
          : 'No task selected',
    ),
    fit(workers.length ? `Workers online: ${escapeControl(workers.join(', '))}` : 'No workers discovered.'),
    fit(`Info: events: ${view.eventCount} tasks:${view.taskCount} workers:${workers.length}/${view.workerCount}`),
    fit('Keys: j:down k:up c:revoke q: quit'),
  )
  return lines
}

export interface EventMonitorOptions {
  brokerUrl: string
  transportSettings?: TransportSettings
  version: string
  input: NodeJS.ReadStream
  output: NodeJS.WriteStream
  warn(line: string): void
}

/** How each node answered, as Celery's monitor lists the replies to a revoke. */
export function describeReplies(what: string, replies: NodeReply[]): string {
  const answers = replies
    .flatMap((reply) => Object.entries(reply))
    .map(([node, body]) => {
      const b = (body ?? {}) as { ok?: unknown; error?: unknown }
      return `${node}: ${String(b.ok ?? (b.error !== undefined ? `error: ${String(b.error)}` : JSON.stringify(body)))}`
    })
  return `${what}: ${answers.length ? answers.join('; ') : 'no reply'}`
}

/** A notice stays on screen this long. */
const NOTICE_MS = 8000

const ENTER_SCREEN = '\x1b[?1049h\x1b[?25l'
const LEAVE_SCREEN = '\x1b[?25h\x1b[?1049l'
const CLEAR = '\x1b[H\x1b[2J'

/** Runs until q, Ctrl-C or SIGTERM; the terminal is restored whatever ends it. */
export async function runEventMonitor(o: EventMonitorOptions): Promise<void> {
  o.warn('-> evtop: starting capture...')
  await withTransport(
    o.brokerUrl,
    async (transport) => {
      const view = new ClusterView()
      let selected: string | null = null
      let notice: { text: string; until: number } | null = null
      let drawTimer: NodeJS.Timeout | undefined
      // A reply that comes after q must not draw over the restored terminal.
      let closed = false
      const draw = (): void => {
        drawTimer = undefined
        if (closed) return
        if (notice && Date.now() > notice.until) notice = null
        const lines = renderScreen(view, {
          width: o.output.columns ?? 80,
          height: o.output.rows ?? 24,
          now: Date.now() / 1000,
          selected,
          greet: `tsq events v${o.version}`,
          notice: notice?.text,
        })
        o.output.write(CLEAR + lines.join('\r\n'))
      }
      // A burst of events is drawn once, not once per event.
      const drawSoon = (): void => {
        drawTimer ??= setTimeout(draw, 100)
      }
      let finish!: () => void
      const finished = new Promise<void>((resolve) => (finish = resolve))
      const move = (step: number): void => {
        const shown = view.latestTasks(taskRows(o.output.rows ?? 24)).map((t) => t.uuid)
        if (shown.length === 0) return
        const at = selected ? shown.indexOf(selected) : -1
        selected = shown[Math.min(shown.length - 1, Math.max(0, at === -1 ? 0 : at + step))] ?? null
        notice = null
        draw()
      }
      const say = (text: string): void => {
        notice = { text, until: Date.now() + NOTICE_MS }
        draw()
      }
      const revokeSelected = (): void => {
        const id = selected
        if (!id) return say('Select a task first (j/k)')
        say(`Revoking ${id}...`)
        new MailboxClient(transport).broadcast('revoke', { arguments: { task_id: id }, timeout: 1 }).then(
          (replies) => say(describeReplies(`Revoke ${id}`, replies)),
          (error: Error) => say(`Revoke ${id} failed: ${error.message}`),
        )
      }
      const onKey = (data: Buffer): void => {
        const key = data.toString('utf8')
        if (key === 'q' || key === 'Q' || key === '\x03' || key === '\x04') finish()
        else if (key === 'j' || key === 'J' || key === '\x1b[B') move(1)
        else if (key === 'k' || key === 'K' || key === '\x1b[A') move(-1)
        else if (key === 'c' || key === 'C') revokeSelected()
      }
      const receiver = new EventReceiver(transport, {
        onEvent: (event) => {
          view.apply(event)
          drawSoon()
        },
        onUnreadable: () => undefined,
        floats: 'number',
      })
      const ticker = setInterval(draw, 1000)
      o.output.write(ENTER_SCREEN)
      o.output.on('resize', draw)
      o.input.setRawMode?.(true)
      o.input.on('data', onKey)
      o.input.resume()
      process.once('SIGTERM', finish)
      try {
        draw()
        await receiver.start()
        await finished
      } finally {
        clearInterval(ticker)
        if (drawTimer) clearTimeout(drawTimer)
        process.off('SIGTERM', finish)
        o.output.off('resize', draw)
        o.input.off('data', onKey)
        o.input.setRawMode?.(false)
        o.input.pause()
        closed = true
        o.output.write(LEAVE_SCREEN)
        await receiver.stop()
      }
    },
    o.transportSettings,
  )
}
