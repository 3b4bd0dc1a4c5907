// What the client commands talk to (src/cli/client-config.ts): -A takes the
// broker, result backend, default queue, routes and transport options from the
// app; --config (TSQ_CONFIG_MODULE) sits under the app; a flag and the
// environment win over both, as for the worker.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, beforeEach, describe, it } from 'node:test'
import { applyGlobalOptions, clientConfig } from '../../../src/cli/client-config.js'
import { ROOT } from '../../helpers/cli.js'

const APP = join(ROOT, 'test/fixtures/tasks/global-options-tasks.js')
const KEYS = [
  'TSQ_BROKER_URL',
  'CELERY_BROKER_URL',
  'TSQ_RESULT_BACKEND',
  'CELERY_RESULT_BACKEND',
  'TSQ_CONFIG_MODULE',
  'TSQ_HOME',
  'TSQ_GO_BROKER',
  'TSQ_GO_BACKEND',
  'TSQ_GO_QUEUE',
  'TSQ_GO_ROUTED_QUEUE',
]
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]))
const dir = mkdtempSync(join(tmpdir(), 'tsq-client-config-'))

describe('client commands: -A and --config', () => {
  // Inside the suite, so the environment it sets reaches only its own tests.
  after(() => {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    rmSync(dir, { recursive: true, force: true })
  })
  beforeEach(() => {
    for (const k of KEYS) delete process.env[k]
    process.env.TSQ_HOME = dir
    // Read once, when the fixture app is first imported.
    process.env.TSQ_GO_BROKER = 'redis://app-broker:6379/0'
    process.env.TSQ_GO_QUEUE = 'app-queue'
    process.env.TSQ_GO_ROUTED_QUEUE = 'routed-queue'
  })

  it('without -A or --config: the embedded broker and the default queue', async () => {
    const c = await clientConfig({})
    assert.equal(c.brokerSource, 'default')
    assert.equal(c.defaultQueue, 'celery')
    assert.deepEqual(c.routeFor('proj.add'), { queue: 'celery' })
  })

  it("-A: the app's broker, default queue and task_routes", async () => {
    const c = await clientConfig({ app: APP })
    assert.equal(c.brokerUrl, 'redis://app-broker:6379/0')
    assert.equal(c.brokerSource, 'app')
    assert.equal(c.defaultQueue, 'app-queue')
    assert.deepEqual(c.routeFor('proj.routed'), { queue: 'routed-queue' })
    assert.deepEqual(c.routeFor('proj.add'), { queue: 'app-queue' })
  })

  it('-A: CELERY_BROKER_URL, then TSQ_BROKER_URL, then -b win over the app', async () => {
    process.env.CELERY_BROKER_URL = 'redis://celery-env:6379/0'
    assert.equal((await clientConfig({ app: APP })).brokerUrl, 'redis://celery-env:6379/0')
    process.env.TSQ_BROKER_URL = 'redis://tsq-env:6379/0'
    assert.equal((await clientConfig({ app: APP })).brokerUrl, 'redis://tsq-env:6379/0')
    const c = await clientConfig({ app: APP, broker: 'amqp://flag//', 'result-backend': 'redis://flag-backend/1' })
    assert.equal(c.brokerUrl, 'amqp://flag//')
    assert.equal(c.resultBackend, 'redis://flag-backend/1')
  })

  it("--config without -A: the module's broker_url, result_backend, task_default_queue, task_routes and transport options", async () => {
    const file = join(dir, 'celeryconfig.json')
    writeFileSync(
      file,
      JSON.stringify({
        broker_url: 'redis://config-broker:6379/0',
        result_backend: 'redis://config-backend:6379/1',
        task_default_queue: 'config-queue',
        task_routes: { 'proj.*': 'config-routed' },
        broker_transport_options: { visibility_timeout: 60 },
      }),
    )
    applyGlobalOptions({ config: file })
    assert.equal(process.env.TSQ_CONFIG_MODULE, file)
    const c = await clientConfig({})
    assert.equal(c.brokerUrl, 'redis://config-broker:6379/0')
    assert.equal(c.resultBackend, 'redis://config-backend:6379/1')
    assert.equal(c.defaultQueue, 'config-queue')
    assert.deepEqual(c.routeFor('proj.add'), { queue: 'config-routed' })
    assert.deepEqual(c.routeFor('other.task'), { queue: 'config-queue' })
    assert.deepEqual(c.transportSettings, { visibilityTimeout: 60 })
    process.env.CELERY_BROKER_URL = 'redis://celery-env:6379/0'
    assert.equal((await clientConfig({})).brokerUrl, 'redis://celery-env:6379/0')
  })

  it("--config with -A: the app's own settings win, the module fills in the rest (a JS module's named exports)", async () => {
    const file = join(dir, 'settings.mjs')
    writeFileSync(
      file,
      "export const broker_url = 'redis://config-broker:6379/0'\nexport const result_backend = 'redis://config-backend:6379/1'\nexport const task_default_queue = 'config-queue'\n",
    )
    process.env.TSQ_CONFIG_MODULE = file
    const c = await clientConfig({ app: APP })
    assert.equal(c.brokerUrl, 'redis://app-broker:6379/0')
    assert.equal(c.resultBackend, 'redis://config-backend:6379/1')
    assert.equal(c.defaultQueue, 'app-queue')
  })

  it('a config module that cannot be found is a usage error naming it', () => {
    assert.throws(() => applyGlobalOptions({ config: join(dir, 'nope') }), { code: 'CONFIG', message: /cannot find the config module/ })
  })
})
