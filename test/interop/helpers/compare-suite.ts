// Spec §3.5: for each inspect/control command Celery 5.2.6 has, `tsq … --json`
// and `celery … --json` against the same Python worker give the same replies
// once volatile fields are normalized.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { InteropContext } from './context.js'
import { normalize } from './normalize.js'
import { parseJsonOut } from './python-worker.js'

interface CompareCase {
  kind: 'inspect' | 'control'
  method: string
  /** `{scratch}` stands for a queue name unique to the run. */
  args?: readonly string[]
  /**
   * The reply depends on the worker's state before the call (enable_events says
   * "enabled" once, then "already enabled"): Celery calls first to reach the
   * steady state, then tsq and Celery are compared one after the other.
   */
  stateful?: boolean
}

const UNKNOWN_ID = '00000000-0000-4000-8000-00000000dead'

const CASES: readonly CompareCase[] = [
  { kind: 'inspect', method: 'ping' },
  { kind: 'inspect', method: 'clock' },
  { kind: 'inspect', method: 'stats' },
  { kind: 'inspect', method: 'active' },
  { kind: 'inspect', method: 'scheduled' },
  { kind: 'inspect', method: 'reserved' },
  { kind: 'inspect', method: 'revoked' },
  { kind: 'inspect', method: 'registered' },
  { kind: 'inspect', method: 'registered', args: ['rate_limit', 'time_limit', 'soft_time_limit'] },
  { kind: 'inspect', method: 'query_task', args: [UNKNOWN_ID] },
  { kind: 'inspect', method: 'conf' },
  { kind: 'inspect', method: 'conf', args: ['true'] },
  { kind: 'inspect', method: 'report' },
  { kind: 'inspect', method: 'active_queues' },
  { kind: 'inspect', method: 'memsample' },
  { kind: 'inspect', method: 'memdump' },
  { kind: 'inspect', method: 'objgraph' },
  { kind: 'control', method: 'revoke', args: [UNKNOWN_ID] },
  { kind: 'control', method: 'terminate', args: ['SIGTERM', UNKNOWN_ID] },
  { kind: 'control', method: 'rate_limit', args: ['proj.sleep', '1000/m'] },
  { kind: 'control', method: 'rate_limit', args: ['proj.nosuchtask', '1/s'] },
  { kind: 'control', method: 'time_limit', args: ['proj.fail', '50', '60'] },
  { kind: 'control', method: 'enable_events', stateful: true },
  { kind: 'control', method: 'disable_events', stateful: true },
  { kind: 'control', method: 'heartbeat' },
  { kind: 'control', method: 'add_consumer', args: ['{scratch}'] },
  { kind: 'control', method: 'cancel_consumer', args: ['{scratch}'] },
  { kind: 'control', method: 'pool_grow', args: ['1'] },
  { kind: 'control', method: 'pool_shrink', args: ['1'] },
  { kind: 'control', method: 'pool_restart' },
  { kind: 'control', method: 'autoscale', args: ['3', '1'] },
  // Not compared: `election` kills a lone 5.2.6 worker (spec §3.5 quirk) and
  // `shutdown` sends no reply; the behaviour suite covers shutdown last.
]

function title(c: CompareCase): string {
  const args = c.args ? ` ${c.args.join(' ').replace('{scratch}', '<queue>')}` : ''
  return `spec §3.5: ${c.kind} ${c.method}${args} --json equals celery's`
}

export function registerCompareCases(ctx: () => InteropContext): void {
  for (const c of CASES) {
    it(title(c), async () => {
      const x = ctx()
      const args = (c.args ?? []).map((a) => (a === '{scratch}' ? x.scratchQueue('cmp') : a))
      let tsq: unknown
      let peer: unknown
      if (c.stateful) {
        await x.remote('celery', c.kind, c.method, args)
        tsq = await x.remote('tsq', c.kind, c.method, args)
        peer = await x.remote('celery', c.kind, c.method, args)
      } else {
        ;[tsq, peer] = await Promise.all([x.remote('tsq', c.kind, c.method, args), x.remote('celery', c.kind, c.method, args)])
      }
      assert.deepStrictEqual(normalize(c.method, tsq), normalize(c.method, peer))
    })
  }

  it('spec §3.5: no replies within -t exits 69 like celery', async () => {
    const x = ctx()
    const argv = ['inspect', 'ping', '-d', 'nosuchnode@nowhere', '-t', '0.5', '--json']
    const [tsq, peer] = await Promise.all([x.tsq(argv), x.celery(argv)])
    assert.equal(peer.code, 69, `celery: ${peer.stderr}`)
    assert.equal(tsq.code, 69, `tsq stdout: ${tsq.stdout}\nstderr: ${tsq.stderr}`)
  })

  it('[status --json] lists the same node as celery status', async () => {
    const x = ctx()
    const argv = ['status', '-d', x.node, '-t', '5', '--json']
    const [tsq, peer] = await Promise.all([x.tsq(argv), x.celery(argv)])
    assert.equal(tsq.code, 0, tsq.stderr)
    assert.equal(peer.code, 0, peer.stderr)
    // celery prints the raw ping list, then "N node online." on stdout; tsq
    // prints one document ({node: reply}, spec §3.5) and the count on stderr.
    const peerDoc = JSON.parse(peer.stdout.trim().split('\n')[0] ?? '') as unknown
    const merge = (doc: unknown): unknown => (Array.isArray(doc) ? Object.assign({}, ...(doc as object[])) : doc)
    assert.deepStrictEqual(merge(parseJsonOut(tsq, 'tsq status')), merge(peerDoc))
  })
}
