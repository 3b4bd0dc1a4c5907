// A JavaScript task's error keeps its name for a JavaScript client, while a
// Python client still gets a class it can load: `throw new Error('x')` is
// stored as Python's builtins.Exception (a JS `Error` is no Python class), with
// `exc_js_name: "Error"` beside it, which Celery's reader ignores and tsq's
// AsyncResult reads; a RangeError or an error class of the task's own keeps its
// name both ways (Python synthesizes the class, as Celery does for any unknown
// type). A retry's log line names the error that caused it, as Celery's
// `Retry in 1s: ValueError('x')`.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { createApp, type App } from '../../src/app/app.js'
import type { TaskError } from '../../src/app/async-result.js'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'

const skip = await brokerSkipReason('redis')
const URL_ = REDIS_URL.replace(/\/0$/, '/9')
const PYTHON = '/usr/bin/python3'

/** Celery 5.2.6 reading the result as a Python client does: the exception class it raises, and its arguments. */
function pythonReads(id: string): Promise<{ type: string; module: string; args: unknown[] }> {
  const code = [
    'import json, sys',
    'from celery import Celery',
    `app = Celery(broker=${JSON.stringify(URL_)}, backend=${JSON.stringify(URL_)})`,
    'exc = app.AsyncResult(sys.argv[1]).get(timeout=30, propagate=False)',
    'print(json.dumps({"type": type(exc).__name__, "module": type(exc).__module__, "args": list(exc.args)}))',
  ].join('\n')
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ['-c', code, id], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.once('exit', (status) => {
      if (status !== 0) return reject(new Error(`python exited ${status}: ${err}`))
      resolve(JSON.parse(out) as { type: string; module: string; args: unknown[] })
    })
  })
}

describe("a JavaScript task's error, read by JavaScript and Python clients", { skip }, () => {
  const queue = uniqueName('tsq-errnames')
  const env = { TSQ_BROKER_URL: URL_, TSQ_RESULT_BACKEND: URL_, CELERY_BROKER_URL: '', CELERY_RESULT_BACKEND: '' }
  let worker: SpawnedWorker
  let client: App

  before(async () => {
    worker = await startWorker(
      ['-A', 'test/fixtures/tasks/error-names-tasks.js', '-P', 'solo', '-Q', queue, '-l', 'INFO', '--without-heartbeat'],
      {
        env,
        nodename: `${queue}@errnames`,
      },
    )
    client = createApp({ name: 'errnames-client', broker: URL_, resultBackend: URL_ })
  })
  after(async () => {
    await client?.close()
    await worker?.stop()
  })

  async function failWith(task: string, message: string): Promise<{ id: string; js: TaskError }> {
    const result = await client.sendTask(task, [message], {}, { queue })
    const js = (await result.get({ timeout: 30, propagate: false })) as TaskError
    return { id: result.id, js }
  }

  it('throw new Error: JavaScript sees Error, Python builtins.Exception', async () => {
    const { id, js } = await failWith('errnames.plain', 'plain x')
    assert.equal(js.name, 'Error')
    assert.equal(js.message, 'plain x')
    assert.equal(js.excType, 'Exception')
    assert.equal(js.excModule, 'builtins')
    assert.deepEqual(await pythonReads(id), { type: 'Exception', module: 'builtins', args: ['plain x'] })
    const cli = await runTsq(['result', id], { env })
    assert.equal(cli.code, 1)
    // `tsq result` is a JavaScript client too: the error as thrown (a TypeError prints `Error: TypeError: boom`).
    assert.equal(cli.stderr, 'Error: plain x\n')
    const stored = JSON.parse((await runTsq(['result', id, '--json'], { env })).stdout) as { result: unknown }
    assert.deepEqual(stored.result, { exc_type: 'Exception', exc_message: ['plain x'], exc_module: 'builtins', exc_js_name: 'Error' })
  })

  it('RangeError, TypeError and a class of the task’s own keep their names both ways', async () => {
    const range = await failWith('errnames.range', 'too far')
    assert.equal(range.js.name, 'RangeError')
    assert.deepEqual(await pythonReads(range.id), { type: 'RangeError', module: 'celery.exceptions', args: ['too far'] })
    const type = await failWith('errnames.type', 'not a number')
    assert.equal(type.js.name, 'TypeError')
    assert.deepEqual(await pythonReads(type.id), { type: 'TypeError', module: 'builtins', args: ['not a number'] })
    const own = await failWith('errnames.own', 'over quota')
    assert.equal(own.js.name, 'QuotaExceeded')
    assert.deepEqual(await pythonReads(own.id), { type: 'QuotaExceeded', module: 'celery.exceptions', args: ['over quota'] })
    const stored = JSON.parse((await runTsq(['result', range.id, '--json'], { env })).stdout) as { result: unknown }
    assert.deepEqual(
      stored.result,
      { exc_type: 'RangeError', exc_message: ['too far'], exc_module: 'builtins' },
      'no extra key when the names agree',
    )
  })

  it("a retry's log line names the error that caused it", async () => {
    const typed = await client.sendTask('errnames.flaky', ['try again'], {}, { queue })
    assert.equal(await typed.get({ timeout: 30 }), 'retried 1 time(s)')
    const plain = await client.sendTask('errnames.flakyPlain', ['once more'], {}, { queue })
    assert.equal(await plain.get({ timeout: 30 }), 'ok')
    const lines = worker.output().split('\n')
    const retryOf = (id: string) => lines.find((l) => l.includes(`[${id}] retry:`))
    assert.match(
      retryOf(typed.id) ?? '',
      new RegExp(`INFO/MainProcess\\] Task errnames\\.flaky\\[${typed.id}\\] retry: Retry in 1s: TypeError\\('try again'\\)$`),
    )
    assert.match(
      retryOf(plain.id) ?? '',
      new RegExp(`\\] Task errnames\\.flakyPlain\\[${plain.id}\\] retry: Retry in 1s: Exception\\('once more'\\)$`),
    )
  })
})
