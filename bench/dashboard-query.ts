// bench/dashboard-query: the dashboard's task queries in-process, with no
// HTTP and no broker, so what the state itself costs per answer shows apart
// from serialisation and the wait for a CPU. Holds --tasks tasks fed as
// bench/dashboard feeds them (received, started, succeeded), then times the
// same queries bench/dashboard sends, and the event intake that fed them.
//
//   node --expose-gc --import tsx bench/dashboard-query.ts [--tasks 100000] [--repeat 21]
//
// Prints one line per figure: the median CPU and wall time of --repeat runs,
// each query's first (cold) run apart. CPU time is the figure to compare on
// a shared machine.
import { ClusterState, type TaskQuery } from '../src/cluster-state/index.js'

const arg = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(name)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const TASKS = arg('--tasks', 100_000)
const REPEAT = arg('--repeat', 21)

const state = new ClusterState({ maxTasks: 100_000 })
const t0 = performance.now()
const c0 = process.cpuUsage()
let events = 0
for (let i = 0; i < TASKS; i++) {
  const uuid = crypto.randomUUID()
  const now = Date.now() / 1000
  const base = { hostname: 'bench@dashboard', utcoffset: 0, pid: 1, clock: i, local_received: now }
  state.apply({
    type: 'task-received',
    uuid,
    name: `bench.task${i % 7}`,
    args: `(${i}, 'payload-${i}')`,
    kwargs: `{'n': ${i}}`,
    retries: 0,
    eta: null,
    expires: null,
    root_id: uuid,
    parent_id: null,
    timestamp: now,
    ...base,
  })
  state.apply({ type: 'task-started', uuid, timestamp: now, ...base })
  state.apply({ type: 'task-succeeded', uuid, result: `${i * 2}`, runtime: 0.001 + (i % 100) / 10_000, timestamp: now, ...base })
  events += 3
}
const fed = performance.now() - t0
const fedCpu = process.cpuUsage(c0)
process.stdout.write(
  `intake  ${(events / (fed / 1000)).toFixed(0)} events/s, ${((fedCpu.user + fedCpu.system) / events).toFixed(1)} µs CPU per event (${events} events into the state, no broker)\n`,
)

/** CPU milliseconds of fn (user + system): on a shared machine, wall time mostly says how long the CPU was elsewhere. */
function cpuMs(fn: () => void): { wall: number; cpu: number } {
  const c = process.cpuUsage()
  const t = performance.now()
  fn()
  const used = process.cpuUsage(c)
  return { wall: performance.now() - t, cpu: (used.user + used.system) / 1000 }
}

// What intake left for the collector is collected first (with --expose-gc),
// so the queries' figures are their own.
;(globalThis as { gc?: () => void }).gc?.()

function time(name: string, q: TaskQuery): void {
  let first: ReturnType<ClusterState['queryTasks']> | undefined
  const cold = cpuMs(() => (first = state.queryTasks(q)))
  const runs: { wall: number; cpu: number }[] = []
  for (let i = 0; i < REPEAT; i++) runs.push(cpuMs(() => state.queryTasks(q)))
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]!
  const wall = median(runs.map((r) => r.wall))
  const cpu = median(runs.map((r) => r.cpu))
  process.stdout.write(
    `${name}  cpu=${cpu.toFixed(2)} ms  wall=${wall.toFixed(2)} ms  (medians of ${REPEAT})  cold cpu=${cold.cpu.toFixed(1)} ms  (${first!.tasks.length} rows, ${first!.filtered} filtered)\n`,
  )
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
