#!/usr/bin/env node
// The interop check between tsq's tracing and the real opentelemetry-instrumentation-celery
// (not part of CI: it needs the OpenTelemetry Python sources, docs/tracing.md).
//
//   TSQ_OTEL_PY_PATH=<dir> OTEL_BROKER=redis://127.0.0.1:6379/0 node test/interop/otel-python/run.mjs [--links]
//
// <dir> holds released snapshots of open-telemetry/opentelemetry-python (opentelemetry-api/src,
// opentelemetry-sdk/src, opentelemetry-semantic-conventions/src) and opentelemetry-python-contrib
// (opentelemetry-instrumentation/src, instrumentation/opentelemetry-instrumentation-celery/src) at
// matching tags (v1.44.0 and v0.65b0 were checked). It starts a tsq worker and a Python Celery worker
// (-P solo, instrumented), each with an in-memory-style exporter writing spans to a file, and runs
// two chains: Python client -> tsq worker -> (sends) Python worker -> (sends) tsq worker, and the
// same from a tsq client. It prints each chain's spans as a tree and checks that each chain is one
// trace (with --links: one trace per run, each run linked to the span that sent it) and that the
// span names and kinds on each side are the ones the other writes. Exit 0 when every check holds.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '../../..')
const PYTHON = process.env.PYTHON ?? '/usr/bin/python3'
const links = process.argv.includes('--links')
const snapshots = process.env.TSQ_OTEL_PY_PATH
if (!snapshots) {
  console.error('TSQ_OTEL_PY_PATH: the directory of the OpenTelemetry Python sources (see the top of this file)')
  process.exit(64)
}
const broker = process.env.OTEL_BROKER ?? 'redis://127.0.0.1:6379/0'
const backendUrl = new URL(broker)
backendUrl.pathname = '/1'
const backend = backendUrl.toString()
const suffix = `${process.pid}-${Date.now()}`
const dir = mkdtempSync(join(tmpdir(), 'tsq-otel-py-'))
const pySpans = join(dir, 'py.jsonl')
const tsqSpans = join(dir, 'tsq.jsonl')

const pythonPath = [
  join(HERE, 'shim'),
  HERE,
  ...[
    'opentelemetry-api/src',
    'opentelemetry-sdk/src',
    'opentelemetry-semantic-conventions/src',
    'opentelemetry-instrumentation/src',
    'instrumentation/opentelemetry-instrumentation-celery/src',
  ].map((p) => join(snapshots, p)),
].join(':')

const common = {
  ...process.env,
  NO_COLOR: '1',
  PYTHONDONTWRITEBYTECODE: '1',
  OTEL_BROKER: broker,
  OTEL_BACKEND: backend,
  OTEL_TSQ_QUEUE: `otel-tsq-${suffix}`,
  OTEL_PY_QUEUE: `otel-py-${suffix}`,
  ...(links ? { OTEL_SPAN_LINKS: '1' } : {}),
}
const pyEnv = { ...common, PYTHONPATH: pythonPath, OTEL_SPANS_FILE: pySpans }
const tsqEnv = { ...common, OTEL_SPANS_FILE: tsqSpans }

const started = []
function start(cmd, args, env, ready) {
  const child = spawn(cmd, args, { cwd: HERE, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let log = ''
  const onData = (d) => (log += d)
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  started.push(child)
  return new Promise((resolveReady, reject) => {
    const deadline = setTimeout(() => reject(new Error(`${args.join(' ')}: not ready in 60 s\n${log}`)), 60_000)
    const poll = setInterval(() => {
      if (ready.test(log)) {
        clearTimeout(deadline)
        clearInterval(poll)
        resolveReady({ child, log: () => log })
      }
    }, 100)
    child.on('exit', (code) => {
      clearTimeout(deadline)
      clearInterval(poll)
      reject(new Error(`${args.join(' ')} exited ${code}\n${log}`))
    })
  })
}

function runOnce(cmd, args, env) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, args, { cwd: HERE, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('exit', (code) => {
      clearTimeout(timer)
      if (code === 0) resolveRun(JSON.parse(out.trim().split('\n').pop()))
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}\n${out}\n${err}`))
    })
  })
}

const readSpans = (file) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : []
const KINDS = ['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER']

function allSpans() {
  return [...readSpans(pySpans).map((s) => ({ ...s, side: 'py' })), ...readSpans(tsqSpans).map((s) => ({ ...s, side: 'tsq' }))]
}

/** The spans of one chain: its client span and every span whose message id is one of `ids`. */
function chainSpans(spans, clientName, ids) {
  return spans.filter((s) => s.name === clientName || ids.includes(s.attributes['messaging.message.id']))
}

function printTree(spans) {
  const byParent = new Map()
  for (const s of spans) {
    const key = spans.some((p) => p.spanId === s.parentSpanId) ? s.parentSpanId : null
    byParent.set(key, [...(byParent.get(key) ?? []), s])
  }
  const walk = (parent, depth) => {
    for (const s of byParent.get(parent) ?? []) {
      const link = s.links?.length ? ` links->${s.links.map((l) => `${l.traceId.slice(0, 8)}/${l.spanId}`).join(',')}` : ''
      console.log(
        `${'  '.repeat(depth)}[${s.side}] ${s.name} ${KINDS[s.kind]} trace=${s.traceId.slice(0, 8)} span=${s.spanId} parent=${s.parentSpanId ?? '-'}${link}`,
      )
      const attrs = Object.entries(s.attributes)
        .filter(([k]) => k.startsWith('celery.') || k.startsWith('messaging.') || k.startsWith('tsq.'))
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      if (attrs.length) console.log(`${'  '.repeat(depth)}    ${attrs.join(' ')}`)
      walk(s.spanId, depth + 1)
    }
  }
  walk(null, 0)
}

const failures = []
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`)
  if (!ok) failures.push(what)
}

/** The checks of one chain: client -> tsq.relay (tsq) -> py.relay (py) -> tsq.add (tsq). */
function checkChain(label, clientName, clientSide, ids) {
  const spans = chainSpans(allSpans(), clientName, [ids.relay, ids.py, ids.add])
  console.log(`\n== ${label} ==`)
  printTree(spans)
  const one = (name, id, side) => spans.find((s) => s.name === name && s.attributes['messaging.message.id'] === id && s.side === side)
  const client = spans.find((s) => s.name === clientName)
  const hops = [
    ['apply_async/tsq.relay', ids.relay, clientSide, 3],
    ['run/tsq.relay', ids.relay, 'tsq', 4],
    ['apply_async/py.relay', ids.py, 'tsq', 3],
    ['run/py.relay', ids.py, 'py', 4],
    ['apply_async/tsq.add', ids.add, 'py', 3],
    ['run/tsq.add', ids.add, 'tsq', 4],
  ]
  const found = hops.map(([name, id, side, kind]) => {
    const s = one(name, id, side)
    check(Boolean(s) && s.kind === kind, `${label}: ${side} wrote ${name} (${KINDS[kind]})`)
    return s
  })
  if (!client || found.some((s) => !s)) return
  const [sendRelay, runRelay, sendPy, runPy, sendAdd, runAdd] = found
  const pairs = [
    [client, sendRelay],
    [sendRelay, runRelay],
    [runRelay, sendPy],
    [sendPy, runPy],
    [runPy, sendAdd],
    [sendAdd, runAdd],
  ]
  for (const [parent, child] of pairs) {
    const consumerLinked = links && child.kind === 4
    if (consumerLinked) {
      check(
        child.parentSpanId === null && child.links.some((l) => l.spanId === parent.spanId && l.traceId === parent.traceId),
        `${label}: ${child.side} ${child.name} starts its own trace, linked to ${parent.side} ${parent.name}`,
      )
    } else {
      check(
        child.parentSpanId === parent.spanId && child.traceId === parent.traceId,
        `${label}: ${child.side} ${child.name} is the child of ${parent.side} ${parent.name}`,
      )
    }
  }
  if (!links) check(new Set([client, ...found].map((s) => s.traceId)).size === 1, `${label}: one trace`)
  for (const s of [runRelay, runPy, runAdd])
    check(
      s.attributes['celery.action'] === 'run' &&
        s.attributes['celery.task_name'] === s.name.slice(4) &&
        s.attributes['celery.state'] === 'SUCCESS',
      `${label}: ${s.side} ${s.name} has celery.action, celery.task_name, celery.state`,
    )
  for (const s of [sendRelay, sendPy, sendAdd])
    check(
      s.attributes['celery.action'] === 'apply_async' && s.attributes['celery.task_name'] === s.name.slice(12),
      `${label}: ${s.side} ${s.name} has celery.action, celery.task_name, messaging.message.id`,
    )
  // The same attribute names on both sides, for the runs each wrote.
  const names = (s) =>
    Object.keys(s.attributes)
      .filter((k) => !k.startsWith('tsq.'))
      .sort()
  console.log(`   run attributes py:  ${names(runPy).join(' ')}`)
  console.log(`   run attributes tsq: ${names(runAdd).join(' ')}`)
  console.log(`   send attributes py:  ${names(sendAdd).join(' ')}`)
  console.log(`   send attributes tsq: ${names(sendPy).join(' ')}`)
}

async function waitSpans(ids) {
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline) {
    const spans = allSpans()
    if (spans.some((s) => s.name === 'run/tsq.add' && s.attributes['messaging.message.id'] === ids.add)) return
    await new Promise((r) => setTimeout(r, 100))
  }
}

try {
  console.log(`mode: ${links ? 'use_span_links' : 'parent/child'}; spans in ${dir}`)
  await start(
    process.execPath,
    [
      join(ROOT, 'bin/run.js'),
      'worker',
      '-A',
      './tsq_tasks.js',
      '-b',
      broker,
      '--result-backend',
      backend,
      '-Q',
      common.OTEL_TSQ_QUEUE,
      '-P',
      'prefork',
      '-c',
      '2',
      '-n',
      `tsq-otel-${suffix}@%h`,
      '--without-mingle',
      '--without-gossip',
      '-l',
      'INFO',
    ],
    tsqEnv,
    /ready\./,
  )
  await start(
    PYTHON,
    [
      '-m',
      'celery',
      '-A',
      'py_app',
      'worker',
      '-P',
      'solo',
      '-Q',
      common.OTEL_PY_QUEUE,
      '-n',
      `py-otel-${suffix}@%h`,
      '--without-mingle',
      '--without-gossip',
      '-l',
      'INFO',
    ],
    pyEnv,
    /ready\./,
  )
  const fromPy = await runOnce(PYTHON, ['py_client.py'], pyEnv)
  await waitSpans(fromPy)
  checkChain('Python client -> tsq worker -> Python worker -> tsq worker', 'py-client', 'py', fromPy)
  const fromTsq = await runOnce(process.execPath, ['tsq_client.mjs'], tsqEnv)
  await waitSpans(fromTsq)
  checkChain('tsq client -> tsq worker -> Python worker -> tsq worker', 'tsq-client', 'tsq', fromTsq)
} catch (error) {
  failures.push(error.message)
  console.error(error.message)
} finally {
  for (const child of started) {
    try {
      process.kill(-child.pid, 'SIGTERM')
    } catch {
      /* gone */
    }
  }
  await new Promise((r) => setTimeout(r, 3000))
  for (const child of started) {
    try {
      process.kill(-child.pid, 'SIGKILL')
    } catch {
      /* gone */
    }
  }
  if (!process.env.OTEL_KEEP) rmSync(dir, { recursive: true, force: true })
}
console.log(failures.length ? `\n${failures.length} check(s) failed` : '\nall checks hold')
process.exit(failures.length ? 1 : 0)
