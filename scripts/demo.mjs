#!/usr/bin/env node
// `npm run demo`: tsq's main job on the embedded broker, as an operator would
// run it: start a worker, send tasks, read their results, ask the worker
// about itself, then stop it with a warm shutdown.
import { spawn, spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { hostname } from 'node:os'
import { delimiter, join } from 'node:path'
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

/** The `tsq` the shell would run, if any. */
function tsqOnPath() {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    try {
      accessSync(join(dir, 'tsq'), constants.X_OK)
      return join(dir, 'tsq')
    } catch {
      // not here
    }
  }
  return undefined
}

/** The README's "tsq on your PATH", for whoever types the examples next. */
function pathHint() {
  const found = tsqOnPath()
  if (found) return `tsq is on your PATH (${found}).`
  return [
    'tsq is not on your PATH yet. Any of these gives you one (see the README, "tsq on your PATH"):',
    '  npm link                     # in this folder: tsq in npm\'s global bin, linked to this checkout',
    '  npx tsq ...                  # from inside this folder, nothing installed',
    '  npm pack && npm install -g ./tsq-0.1.0.tgz   # a copy of its own',
  ].join('\n')
}

// Celery's order: the app before the command, as `celery -A proj worker`.
console.log(`$ tsq -A examples/tasks.js worker -c 2 -n ${node} -l INFO`)
console.log(`Starting worker ${node} on the embedded broker...\n`)
const worker = spawn(process.execPath, [bin, '-A', 'examples/tasks.js', 'worker', '-c', '2', '-n', node, '-l', 'INFO'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
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
console.log(`\n${pathHint()}`)
process.exit(code === 0 ? 0 : 1)
