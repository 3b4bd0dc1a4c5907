// pidAlive: a zombie answers kill(pid, 0) but is dead, so its pidfile is stale.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { it } from 'node:test'
import { pidAlive } from '../../../src/worker/pidfile.js'

it('[pidAlive] a zombie (state Z) counts as dead; a live process as alive', async (t) => {
  // `true` exits at once and its parent, exec'd into `sleep`, never reaps it.
  const parent = spawn('sh', ['-c', 'true & echo $!; exec sleep 10'], { stdio: ['ignore', 'pipe', 'ignore'] })
  t.after(() => parent.kill('SIGKILL'))
  const zombie = await new Promise<number>((resolve) => parent.stdout.once('data', (d) => resolve(Number.parseInt(String(d), 10))))
  for (let i = 0; i < 100 && !/\) Z/.test(readFileSync(`/proc/${zombie}/stat`, 'utf8')); i++) await new Promise((r) => setTimeout(r, 20))
  assert.match(readFileSync(`/proc/${zombie}/stat`, 'utf8'), /\) Z/)
  assert.equal(pidAlive(zombie), false)
  assert.equal(pidAlive(parent.pid!), true)
  assert.equal(pidAlive(process.pid), true)
})
