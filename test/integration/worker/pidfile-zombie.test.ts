// pidAlive: a zombie answers kill(pid, 0) but is dead, so its pidfile is stale.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { it } from 'node:test'
import { pidAlive } from '../../../src/process/pidfile.js'

it('[pidAlive] a zombie (state Z) counts as dead; a live process as alive', async (t) => {
  // The child exits just after its parent has exec'd into `sleep`, which never
  // reaps it (a child that exits first may be reaped by sh before the exec).
  const parent = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 10'], { stdio: ['ignore', 'pipe', 'ignore'] })
  t.after(() => parent.kill('SIGKILL'))
  const zombie = await new Promise<number>((resolve) => parent.stdout.once('data', (d) => resolve(Number.parseInt(String(d), 10))))
  for (let i = 0; i < 150 && !/\) Z/.test(readFileSync(`/proc/${zombie}/stat`, 'utf8')); i++) await new Promise((r) => setTimeout(r, 20))
  assert.match(readFileSync(`/proc/${zombie}/stat`, 'utf8'), /\) Z/)
  assert.equal(pidAlive(zombie), false)
  assert.equal(pidAlive(parent.pid!), true)
  assert.equal(pidAlive(process.pid), true)
})
