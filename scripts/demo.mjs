#!/usr/bin/env node
// `npm run demo`: tsq's main job on the embedded broker, as an operator would
// run it: start a worker, send tasks, read their results, ask the worker
// about itself, then stop it with a warm shutdown.
import { spawn, spawnSync } from 'node:child_process'
import { hostname } from 'node:os'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const bin = `${root}bin/run.js`
const node = `demo-${process.pid}@${hostname()}`

function tsq(...args) {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: 'utf8' })
  return { code: r.status, out: r.stdout.trim(), err: r.stderr.trim() }
}

function show(title, r) {
  console.log(`$ tsq ${title}`)
  if (r.out) console.log(r.out)
  if (r.err) console.log(r.err)
  console.log()
}

console.log(`Starting worker ${node} on the embedded broker...\n`)
const worker = spawn(process.execPath, [bin, 'worker', '-A', 'examples/tasks.js', '-c', '2', '-n', node, '-l', 'INFO'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
let up = false
for (let i = 0; i < 60 && !up; i++) up = tsq('inspect', 'ping', '-d', node, '-t', '1', '--json').code === 0
if (!up) {
  worker.kill('SIGKILL')
  console.error('the worker did not answer within 60 s')
  process.exit(1)
}

const sends = [
  ['proj.add', '[2, 3]'],
  ['proj.mul', '[6, 7]'],
  ['proj.fail', '["boom"]'],
]
const ids = sends.map(([task, args]) => {
  const r = tsq('call', task, '--args', args)
  show(`call ${task} --args '${args}'`, r)
  return r.out
})
for (const id of ids) show(`result ${id} -t 10`, tsq('result', id, '-t', '10'))
show(`status -d ${node}`, tsq('status', '-d', node))
show(`inspect stats -d ${node}`, tsq('inspect', 'stats', '-d', node))

worker.kill('SIGTERM')
const code = await new Promise((resolve) => worker.once('exit', (c) => resolve(c)))
console.log(`\nworker exited with ${code}`)
process.exit(code === 0 ? 0 : 1)
