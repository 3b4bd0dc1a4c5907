// The failed-task inbox on each result store: the FAILURE results it lists
// (filtered by task, exception, worker and time), a kept message read back
// byte for byte beside them, a kept message whose task has no result (it
// ignores results), and purge dropping both. Redis, SQL (db+sqlite),
// django-db (on SQLite, its table made as the package's migration makes it)
// and file://.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createResultBackend, openSqlClient, type KeptMessage, type ResultBackend } from '../../../src/backends/index.js'
import { listFailed, purgeFailed } from '../../../src/client/index.js'
import { dumps, encodeException, resultMetaValue } from '../../../src/protocol/index.js'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../../helpers/brokers.js'

const dir = mkdtempSync(join(tmpdir(), 'tsq-failed-store-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** django_celery_results' 0011 migration's table, as SQLite has it. */
const DJANGO_TABLE = `CREATE TABLE django_celery_results_taskresult (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, task_id VARCHAR(255) NOT NULL UNIQUE, status VARCHAR(50) NOT NULL,
  content_type VARCHAR(128) NOT NULL, content_encoding VARCHAR(64) NOT NULL, result TEXT NULL, date_done DATETIME NOT NULL,
  traceback TEXT NULL, meta TEXT NULL, task_args TEXT NULL, task_kwargs TEXT NULL, task_name VARCHAR(255) NULL,
  worker VARCHAR(100) NULL, date_created DATETIME NOT NULL, periodic_task_name VARCHAR(255) NULL)`

const redisSkip = await brokerSkipReason('redis')

const STORES: { name: string; skip: string | false; open: () => Promise<ResultBackend> }[] = [
  { name: 'redis', skip: redisSkip, open: () => createResultBackend(REDIS_URL.replace(/\/\d+$/, '/4')) },
  { name: 'db+sqlite', skip: false, open: () => createResultBackend(`db+sqlite:///${join(dir, 'results.sqlite')}`) },
  {
    name: 'django-db',
    skip: false,
    open: async () => {
      const url = `sqlite:///${join(dir, 'django.sqlite')}`
      const client = await openSqlClient(url)
      await client.query(DJANGO_TABLE)
      await client.close()
      return createResultBackend('django-db', { database: { url } })
    },
  },
  { name: 'file', skip: false, open: () => createResultBackend(`file://${join(dir, 'broker')}`) },
]

for (const s of STORES) {
  describe(`failed-task inbox on ${s.name}`, { skip: s.skip }, () => {
    it('lists and filters failures, reads a kept message back exactly, and purges', async () => {
      const backend = await s.open()
      try {
        const p = uniqueName('f')
        const fail = (id: string, type: string, name: string, worker: string) =>
          backend.store(
            id,
            dumps(
              resultMetaValue({
                taskId: id,
                status: 'FAILURE',
                result: encodeException(type, ['boom']),
                traceback: `Traceback...\n${type}: boom`,
                extended: { name, args: ['a\x00b'], kwargs: {}, worker, retries: 0, queue: 'celery' },
              }),
            ),
            'FAILURE',
          )
        await fail(`${p}-a`, 'ValueError', 'proj.charge', 'w1@h')
        await fail(`${p}-b`, 'KeyError', 'proj.ship', 'w2@h')
        await backend.store(`${p}-ok`, dumps(resultMetaValue({ taskId: `${p}-ok`, status: 'SUCCESS', result: 1 })), 'SUCCESS')
        const store = backend.failedStore!()
        const message = (taskId: string): KeptMessage => ({
          taskId,
          task: 'proj.charge',
          worker: 'w1@h',
          failedAt: new Date().toISOString(),
          excType: 'ValueError',
          exception: "ValueError('boom')",
          body: Buffer.from([0, 1, 0xfe, 0xff]),
          properties: {
            contentType: 'application/x-msgpack',
            contentEncoding: 'binary',
            headers: { id: taskId, big: 18446744073709551617n },
            deliveryMode: 2,
            priority: 0,
          },
          exchange: '',
          routingKey: 'celery',
          queue: 'celery',
        })
        const kept = message(`${p}-a`)
        await store.keep(kept)
        await store.keep(message(`${p}-noresult`))
        const back = await store.kept(`${p}-a`)
        assert.deepEqual(back, kept)
        assert.ok(back!.body.equals(Buffer.from([0, 1, 0xfe, 0xff])))
        assert.equal(back!.properties.headers.big, 18446744073709551617n)

        const mine = async (filter: Parameters<typeof listFailed>[1]) =>
          (await listFailed(backend, filter)).filter((t) => t.taskId.startsWith(p)).map((t) => t.taskId.slice(p.length + 1))
        assert.deepEqual((await mine({})).sort(), ['a', 'b', 'noresult'])
        assert.deepEqual(await mine({ exception: 'keyerror' }), ['b'])
        assert.deepEqual((await mine({ task: 'proj.charge' })).sort(), ['a', 'noresult'])
        assert.deepEqual(await mine({ worker: 'w2@*' }), ['b'])
        assert.deepEqual(await mine({ since: new Date(Date.now() + 60_000) }), [])
        const a = (await listFailed(backend, {})).find((t) => t.taskId === `${p}-a`)!
        assert.equal(a.replay, 'message')
        assert.equal(a.exception, "ValueError('boom')")

        await purgeFailed(backend, [`${p}-a`, `${p}-noresult`])
        assert.equal(await store.kept(`${p}-a`), null)
        assert.equal(await backend.get(`${p}-a`), null)
        assert.deepEqual(await mine({}), ['b'])
      } finally {
        await backend.close()
      }
    })
  })
}
