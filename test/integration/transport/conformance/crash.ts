import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { it } from 'node:test'
import { createTransport } from '../../../../src/transport/registry.js'
import { waitFor } from '../../../helpers/brokers.js'
import { Collector, type ConformanceContext, message } from './context.js'

const FIXTURE = fileURLToPath(new URL('./fixtures/consume-and-hang.ts', import.meta.url))
/** Redis gives messages back only after the visibility timeout, so allow for it. */
const RECOVERY_MS = 45_000

export function crashCases(ctx: ConformanceContext): void {
  it('deliveries held by a consumer killed with SIGKILL reach a fresh consumer', { timeout: 120_000 }, async (t) => {
    const crashUrl = ctx.opts.crashUrl
    if (!crashUrl) {
      t.skip('no crashUrl given for this transport')
      return
    }
    const publisher = await ctx.open(() => createTransport(crashUrl))
    const q = await ctx.queue(publisher)
    const bodies = ['c0', 'c1', 'c2']
    for (const body of bodies) await publisher.publish('', q, message(body))

    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, crashUrl, q], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    try {
      await waitFor(() => out.includes(`got ${bodies.length}`) || child.exitCode !== null, {
        timeoutMs: 30_000,
        what: 'the child to receive every message',
      })
      assert.ok(out.includes(`got ${bodies.length}`), `child exited early: ${err.trim()}`)
    } finally {
      child.kill('SIGKILL')
      await exited
    }

    const fresh = await ctx.open(() => createTransport(crashUrl))
    const got = new Collector()
    await fresh.consume(q, (d) => {
      got.handler(d)
      void d.ack()
    })
    await waitFor(() => new Set(got.bodies()).size >= bodies.length, { timeoutMs: RECOVERY_MS, what: "the dead consumer's messages" })
    assert.deepEqual([...new Set(got.bodies())].sort(), bodies)
  })
}
