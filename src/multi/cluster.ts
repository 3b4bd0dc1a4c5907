// start, stop, stopwait, restart and kill over a node list (Celery's Cluster,
// celery/apps/multi.py), without its pidfile traps: a pidfile is trusted only
// when its pid is alive and is that node's own tsq worker.
import { mkdirSync, unlinkSync } from 'node:fs'
import { dirname } from 'node:path'
import { inspectPid, inspectPidfile, pidAlive, readPidfile, type PidState } from './process-check.js'
import type { NodePlan } from './node-plan.js'
import type { MultiOutput } from './output.js'
import { recordOf, saveRecord } from './records.js'
import { spawnDetached } from './spawn-node.js'

export type NodeStatus = 'OK' | 'FAILED' | 'DOWN' | 'SIGNALLED' | 'STOPPED' | 'TIMEOUT' | 'NOT_SIGNALLED'

export interface NodeResult {
  node: string
  status: NodeStatus
  pid: number | null
  pidfile: string
  signal?: string
  message?: string
}

export interface ClusterDeps {
  executable: string
  hostname: string
  runDir: string
  out: MultiOutput
  /** The node names among `nodes` that answered a ping within `timeoutSec`. */
  ping(brokerUrl: string, nodes: string[], timeoutSec: number): Promise<string[]>
  brokerFor(plan: NodePlan): Promise<string>
  env?: NodeJS.ProcessEnv
  pollMs?: number
  now?: () => number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export function signalName(sig: NodeJS.Signals | number): string {
  return typeof sig === 'number' ? String(sig) : sig.replace(/^SIG/, '')
}

/** Reports and removes a pidfile that does not point at the node's worker. */
function dropStale(plan: NodePlan, state: PidState, deps: ClusterDeps): string | null {
  if (state.kind !== 'dead' && state.kind !== 'foreign') return null
  const why = state.kind === 'dead' ? `pid ${state.pid} is not running` : `pid ${state.pid} is ${state.what}`
  const message = `stale pidfile ${plan.pidfile} (${why})`
  try {
    unlinkSync(plan.pidfile)
  } catch {
    // Someone else removed it first: nothing left to replace.
  }
  deps.out.warn(`> ${plan.name}: ${message}: ${state.kind === 'foreign' ? 'not signalled, ' : ''}removed`)
  return message
}

export async function startNodes(plans: NodePlan[], deps: ClusterDeps, timeoutSec: number): Promise<NodeResult[]> {
  const { out } = deps
  out.note('> Starting nodes...')
  const results = new Map<string, NodeResult>()
  const waiting: Array<{ plan: NodePlan; pid: number | null; broker: string }> = []
  for (const plan of plans) {
    const base = { node: plan.name, pidfile: plan.pidfile }
    const state = inspectPidfile(plan.pidfile, plan.name, deps.hostname)
    if (state.kind === 'running') {
      results.set(plan.name, { ...base, status: 'FAILED', pid: state.pid, message: `already running as pid ${state.pid}` })
      continue
    }
    dropStale(plan, state, deps)
    try {
      mkdirSync(dirname(plan.pidfile), { recursive: true })
      mkdirSync(dirname(plan.logfile), { recursive: true })
      saveRecord(recordOf(plan), deps.runDir)
    } catch (error) {
      results.set(plan.name, { ...base, status: 'FAILED', pid: null, message: (error as Error).message })
      continue
    }
    out.info(`  ${[plan.executable, ...plan.argv].join(' ')}`)
    const spawned = await spawnDetached(plan.executable, plan.argv, plan.cwd, deps.env)
    if (spawned.code !== 0) {
      const why = spawned.error ?? (spawned.signal ? `terminated by signal ${spawned.signal}` : `exit code ${spawned.code}`)
      results.set(plan.name, { ...base, status: 'FAILED', pid: null, message: why })
      continue
    }
    let broker: string
    try {
      broker = await deps.brokerFor(plan)
    } catch (error) {
      results.set(plan.name, { ...base, status: 'FAILED', pid: spawned.pid, message: (error as Error).message })
      continue
    }
    waiting.push({ plan, pid: spawned.pid, broker })
  }
  await awaitPings(waiting, results, deps, timeoutSec)
  const ordered = plans.map((p) => results.get(p.name)!)
  for (const r of ordered) {
    const status = r.status === 'OK' ? out.paint.ok('OK') : out.paint.failed('FAILED')
    out.note(`\t> ${r.node}: ${status}${r.message && r.status !== 'OK' ? ` (${r.message})` : ''}`)
  }
  return ordered
}

/** Pings until every started node answers, dies, or the deadline passes. */
async function awaitPings(
  waiting: Array<{ plan: NodePlan; pid: number | null; broker: string }>,
  results: Map<string, NodeResult>,
  deps: ClusterDeps,
  timeoutSec: number,
): Promise<void> {
  const now = deps.now ?? Date.now
  const deadline = now() + timeoutSec * 1000
  let pending = [...waiting]
  let lastError: string | null = null
  while (pending.length) {
    const brokers = [...new Set(pending.map((w) => w.broker))]
    for (const broker of brokers) {
      const names = pending.filter((w) => w.broker === broker).map((w) => w.plan.name)
      try {
        const answered = new Set(await deps.ping(broker, names, 1))
        for (const w of pending) {
          if (w.broker !== broker || !answered.has(w.plan.name)) continue
          const pid = readPidfile(w.plan.pidfile) ?? w.pid
          results.set(w.plan.name, { node: w.plan.name, pidfile: w.plan.pidfile, status: 'OK', pid })
        }
      } catch (error) {
        lastError = (error as Error).message.split('\n')[0] ?? null
        await sleep(deps.pollMs ?? 200)
      }
    }
    pending = pending.filter((w) => !results.has(w.plan.name))
    for (const w of pending) {
      const pid = readPidfile(w.plan.pidfile) ?? w.pid
      if (pid !== null && !pidAlive(pid)) {
        results.set(w.plan.name, {
          node: w.plan.name,
          pidfile: w.plan.pidfile,
          status: 'FAILED',
          pid,
          message: `worker exited during start-up; see ${w.plan.logfile.replace('%I', '')}`,
        })
      }
    }
    pending = pending.filter((w) => !results.has(w.plan.name))
    if (pending.length && now() >= deadline) {
      for (const w of pending) {
        const why = lastError ?? `no ping reply within ${timeoutSec}s; see ${w.plan.logfile.replace('%I', '')}`
        results.set(w.plan.name, {
          node: w.plan.name,
          pidfile: w.plan.pidfile,
          status: 'FAILED',
          pid: readPidfile(w.plan.pidfile) ?? w.pid,
          message: why,
        })
      }
      pending = []
    }
  }
}

export interface StopOptions {
  signal: NodeJS.Signals
  wait: boolean
  /** Seconds to wait for the nodes to go (stopwait); null waits for ever, as Celery. */
  timeoutSec: number | null
}

export async function stopNodes(plans: NodePlan[], deps: ClusterDeps, o: StopOptions): Promise<NodeResult[]> {
  const { out } = deps
  const results: NodeResult[] = []
  const targets: Array<{ plan: NodePlan; pid: number; result: NodeResult }> = []
  for (const plan of plans) {
    const state = inspectPidfile(plan.pidfile, plan.name, deps.hostname)
    const result: NodeResult = { node: plan.name, pidfile: plan.pidfile, status: 'DOWN', pid: null }
    results.push(result)
    if (state.kind === 'running') {
      result.pid = state.pid
      targets.push({ plan, pid: state.pid, result })
      continue
    }
    const stale = dropStale(plan, state, deps)
    if (stale) result.message = stale
    if (state.kind === 'foreign') {
      result.status = 'NOT_SIGNALLED'
      result.pid = state.pid
    } else {
      out.note(`> ${plan.name}: ${out.paint.down('DOWN')}`)
    }
  }
  if (!targets.length) return results
  out.note(out.paint.blue('> Stopping nodes...'))
  const sig = signalName(o.signal)
  const signalled: typeof targets = []
  for (const t of targets) {
    // Checked again right before the signal: the pid must still be this node's worker.
    const state = inspectPid(t.pid, t.plan.name, deps.hostname)
    if (state.kind !== 'running') {
      t.result.message = dropStale(t.plan, state, deps) ?? undefined
      if (state.kind === 'foreign') t.result.status = 'NOT_SIGNALLED'
      continue
    }
    out.note(`\t> ${t.plan.name}: ${sig} -> ${t.pid}`)
    try {
      process.kill(t.pid, o.signal)
      t.result.status = 'SIGNALLED'
      t.result.signal = sig
      signalled.push(t)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
      out.note(`Could not signal ${t.plan.name} (${t.pid}): No such process`)
    }
  }
  if (o.wait && signalled.length) await waitGone(signalled, deps, o.timeoutSec)
  return results
}

async function waitGone(
  targets: Array<{ plan: NodePlan; pid: number; result: NodeResult }>,
  deps: ClusterDeps,
  timeoutSec: number | null,
): Promise<void> {
  const { out } = deps
  const now = deps.now ?? Date.now
  const pollMs = deps.pollMs ?? 200
  const deadline = timeoutSec === null ? Infinity : now() + timeoutSec * 1000
  let left = [...targets]
  // The waiting line stays open for progress dots until a node goes.
  let open = false
  const announce = () => {
    const n = left.length
    if (!n) return
    out.note(out.paint.blue(`> Waiting for ${n} ${n === 1 ? 'node' : 'nodes'} -> ${left.map((t) => t.pid).join(', ')}...`), false)
    open = true
  }
  const closeLine = () => {
    if (open) out.note('')
    open = false
  }
  announce()
  let polls = 0
  while (left.length) {
    const gone = left.filter((t) => inspectPid(t.pid, t.plan.name, deps.hostname).kind !== 'running')
    if (gone.length) {
      closeLine()
      for (const t of gone) {
        t.result.status = 'STOPPED'
        out.note(`\t> ${t.plan.name}: ${out.paint.ok('OK')}`)
      }
      left = left.filter((t) => !gone.includes(t))
      announce()
      continue
    }
    if (now() >= deadline) {
      closeLine()
      for (const t of left) {
        t.result.status = 'TIMEOUT'
        t.result.message = `still running after ${timeoutSec}s`
        out.note(`\t> ${t.plan.name}: ${out.paint.failed('TIMEOUT')} (pid ${t.pid} still running after ${timeoutSec}s)`)
      }
      return
    }
    await sleep(pollMs)
    if (++polls % Math.max(1, Math.round(1000 / pollMs)) === 0) out.note('.', false)
  }
  closeLine()
}

export async function restartNodes(
  plans: NodePlan[],
  deps: ClusterDeps,
  o: { signal: NodeJS.Signals; timeoutSec: number | null; startTimeoutSec: number },
): Promise<NodeResult[]> {
  const stopped = await stopNodes(plans, deps, { signal: o.signal, wait: true, timeoutSec: o.timeoutSec })
  const stuck = new Set(stopped.filter((r) => r.status === 'TIMEOUT').map((r) => r.node))
  const again = plans.filter((p) => !stuck.has(p.name))
  const started = again.length ? await startNodes(again, deps, o.startTimeoutSec) : []
  return plans.map((p) => {
    const s = started.find((r) => r.node === p.name)
    return s ?? { ...stopped.find((r) => r.node === p.name)!, status: 'FAILED', message: 'did not stop, so not restarted' }
  })
}
