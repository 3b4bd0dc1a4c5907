// bench/dashboard-query: the dashboard's task queries in-process, with no
// HTTP and no broker, so what the state itself costs per answer shows apart
// from serialisation and the wait for a CPU. Holds --tasks tasks fed as
// bench/dashboard feeds them (received, started, succeeded), then times the
// same queries bench/dashboard sends, and the event intake that fed them.
//
//   node --import tsx bench/dashboard-query.ts [--tasks 100000] [--repeat 21]
//
// Prints one line per figure: the median and the slowest of --repeat runs,
// each query's first (cold) run apart.
import { ClusterState, type TaskQuery } from '../src/dashboard/state.js'

const arg = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(name)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const TASKS = arg('--tasks', 100_000)
const REPEAT = arg('--repeat', 21)

const state = new ClusterState({ maxTasks: 100_000 })
const t0 = performance.now()
let events = 0
for (let i = 0; i < TASKS; i++) {
  const uuid = crypto.randomUUID()
  const now = Date.now() / 1000
  const base = { hostname: 'bench@dashboard', utcoffset: 0, pid: 1, clock: i, local_received: now }
  state.apply({ type: 'task-received', uuid, name: `bench.task${i % 7}`, args: `(${i}, 'payload-${i}')`, kwargs: `{'n': ${i}}`, retries: 0, eta: null, expires: null, root_id: uuid, parent_id: null, timestamp: now, ...base })
  state.apply({ type: 'task-started', uuid, timestamp: now, ...base })
  state.apply({ type: 'task-succeeded', uuid, result: `${i * 2}`, runtime: 0.001 + (i % 100) / 10_000, timestamp: now, ...base })
  events += 3
}
const fed = performance.now() - t0
process.stdout.write(`intake  ${(events / (fed / 1000)).toFixed(0)} events/s (${events} events into the state, no broker)\n`)

function time(name: string, q: TaskQuery): void {
  const cold = performance.now()
  const first = state.queryTasks(q)
  const coldMs = performance.now() - cold
  const ms: number[] = []
  for (let i = 0; i < REPEAT; i++) {
    const t = performance.now()
    state.queryTasks(q)
    ms.push(performance.now() - t)
  }
  ms.sort((a, b) => a - b)
  process.stdout.write(`${name}  median=${ms[ms.length >> 1]!.toFixed(2)} ms  max=${ms[ms.length - 1]!.toFixed(2)} ms  cold=${coldMs.toFixed(2)} ms  (${first.tasks.length} rows, ${first.filtered} filtered)\n`)
}

const needle = `payload-${TASKS - 1000}'`
time('search (rare)', { search: needle, limit: 20, count: false })
time('search (rare, counted)', { search: needle, limit: 20 })
time('search (common, counted)', { search: 'bench.task3', limit: 20, offset: 0 })
time('search (common)', { search: 'bench.task3', limit: 20, count: false })
time('page -received', { limit: 25, offset: 50, sortBy: '-received', count: false })
time('table page -runtime', { limit: 25, offset: 25, sortBy: '-runtime' })
time('table page name asc, state filter', { limit: 25, offset: 0, sortBy: 'name', state: 'SUCCESS' })
time('table page, received range', { limit: 25, offset: 0, receivedStart: Date.now() / 1000 - 3600 })
time('last page by uuid', { limit: 25, offset: 99_000, sortBy: 'uuid' })
process.stdout.write(`heap in use ${(process.memoryUsage().heapUsed / 1048576).toFixed(1)} MB\n`)
