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
    "  npm link                     # in this folder: tsq in npm's global bin, linked to this checkout",
    '  npx tsq ...                  # from inside this folder, nothing installed',
    '  npm pack && npm install -g ./tsq-0.1.0.tgz   # a copy of its own',
  ].join('\n')
}

// Celery's order: the app before the command, as `celery -A proj worker`.
console.log(`$ tsq -A examples/tasks.js worker -c 2 -n ${node} -l INFO`)
console.log(`Starting worker ${node} on the embedded broker...\n`)
const worker = spawn(process.execPath, [bin, '-A', 'examples/tasks.js', 'worker', '-c', '2', '-n', node, '-l', 'INFO'], {
  cwd: root,
  stdio: ['ignore', 'inherit', 'inherit'],
})
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
const eventsCode = await eventsDemo()
console.log(`\n${pathHint()}`)
process.exit(code === 0 && eventsCode === 0 ? 0 : 1)

/**
 * Events between services (docs/events-bus.md): billing and
 * shipping both handle billing.invoice.paid; shipping's handler fails once for
 * invoice 1 (retried after 1 s) and always for invoice 13 (archived after its
 * retries at 1 s and 2 s). Returns 0 when both workers stopped cleanly.
 */
async function eventsDemo() {
  console.log('\n--- Events between services ---\n')
  const started = []
  for (const service of ['billing', 'shipping']) {
    const name = `${service}-${process.pid}@${hostname()}`
    const args = [
      '-A',
      `examples/events/${service}.js`,
      'worker',
      '-P',
      'solo',
      '-n',
      name,
      '--without-mingle',
      '--without-gossip',
      '--without-heartbeat',
      '-l',
      'INFO',
    ]
    console.log(`$ tsq ${args.join(' ')}`)
    const child = spawn(process.execPath, [bin, ...args], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
    started.push({ name, child })
  }
  for (const { name } of started) {
    let ready = false
    for (let i = 0; i < 60 && !ready; i++) ready = tsq('inspect', 'ping', '-d', name, '-t', '1', '--json').code === 0
    if (!ready) {
      for (const w of started) w.child.kill('SIGKILL')
      console.error(`${name} did not answer within 60 s`)
      return 1
    }
  }
  console.log()
  for (const invoice of [
    { id: 7, total: 9.5 },
    { id: 1, total: 20 },
    { id: 13, total: 13 },
  ]) {
    const args = JSON.stringify([invoice])
    show(`fire billing.invoice.paid --args '${args}'`, tsq('fire', 'billing.invoice.paid', '--args', args))
  }
  // Invoice 13's retries wait 1 s, then 2 s, at shipping's retry steps; then it is archived.
  await new Promise((resolve) => setTimeout(resolve, 5000))
  show('bus ls --service shipping', tsq('bus', 'ls', '--service', 'shipping'))
  show('archive ls --service shipping', tsq('archive', 'ls', '--service', 'shipping'))
  show('archive purge --service shipping -f', tsq('archive', 'purge', '--service', 'shipping', '-f'))
  let codes = 0
  for (const { child } of started) {
    child.kill('SIGTERM')
    codes += await new Promise((resolve) => child.once('exit', (c) => resolve(c ?? 1)))
  }
  return codes
}
