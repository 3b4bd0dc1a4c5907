// A task that leaves stray errors behind must not take its worker or pool process down.
import assert from 'node:assert/strict'
import type { App } from '../../src/index.js'
import type { SpawnedWorker } from './cli.js'

/** proj.stray twice, each followed by proj.add: all four succeed on the same worker, which logged each stray error. */
export async function strayErrorsAreSurvived(app: App, worker: () => SpawnedWorker, queue: string): Promise<void> {
  const log = (msg: string) => `${msg}\n--- worker ---\n${worker().output().slice(-4000)}`
  for (let round = 0; round < 2; round++) {
    const stray = await app.sendTask('proj.stray', [], {}, { queue })
    assert.equal(await stray.get({ timeout: 20 }).catch((e: Error) => log(e.message)), 'ok')
    await new Promise((resolve) => setTimeout(resolve, 50))
    const sum = await app.sendTask('proj.add', [round, 1], {}, { queue })
    assert.equal(await sum.get({ timeout: 20 }).catch((e: Error) => log(e.message)), round + 1)
  }
  const out = worker().output()
  assert.equal(worker().child.exitCode, null, log('the worker exited'))
  assert.equal(out.match(/Unhandled promise rejection in task code \(the worker goes on\): Error: stray rejection/g)?.length, 2, log(''))
  assert.equal(out.match(/Uncaught exception in task code \(the worker goes on\): Error: stray throw/g)?.length, 2, log(''))
  assert.ok(!/was lost/.test(out), log('a pool process was lost'))
}
