// The one masking function and the control-character escaping: URLs with
// passwords (user-info, `?password=`, lists), settings masked as Celery's
// filter_hidden_settings masks them and beyond (any URL-valued or secret-named
// setting), error lines about a setting, DEBUG lines of ioredis, a prefork
// child's environment, the dashboard's basic-auth sources, and values that
// would forge a log line.
import assert from 'node:assert/strict'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import {
  dumpEventLine,
  escapeControl,
  escapeControlKeepLines,
  filterHiddenSettings,
  maskSetting,
  maskUrl,
  maskUrlsInText,
  shownSetting,
  taskLabel,
  urlHasSecret,
} from '../../../src/protocol/index.js'
import { redactDebugLine } from '../../../src/transport/redis/debug-filter.js'
import { slotEnv } from '../../../src/worker/pools/slot-entry.js'
import { resolveBasicAuth } from '../../../src/dashboard/basic-auth.js'
import { safeLine } from '../../../src/process/logger.js'
import { checkBackendTransportOptions } from '../../../src/config/transport-options.js'
import { buildReport, formatReport } from '../../../src/cli/report.js'
import { createApp } from '../../../src/index.js'

describe('maskUrl', () => {
  it("masks the password as kombu's as_uri does, and leaves URLs without one alone", () => {
    assert.equal(maskUrl('amqp://guest:guest@host//'), 'amqp://guest:**@host//')
    assert.equal(maskUrl('redis://:pw@127.0.0.1:6379/0'), 'redis://:**@127.0.0.1:6379/0')
    assert.equal(maskUrl('amqp://guest@host//'), 'amqp://guest@host//')
    assert.equal(maskUrl('file:///var/tsq'), 'file:///var/tsq')
    assert.equal(maskUrl('not a url'), 'not a url')
  })

  it('masks secret query parameters, keeps the others', () => {
    assert.equal(maskUrl('redis://127.0.0.1/0?password=qpw&socket_timeout=5'), 'redis://127.0.0.1/0?password=**&socket_timeout=5')
    assert.equal(
      maskUrl('amqp://u:p@h/v?heartbeat=10&sasl_password=x', '********'),
      'amqp://u:********@h/v?heartbeat=10&sasl_password=********',
    )
    assert.equal(maskUrl('sqs://h/?token=t&access_key=a&region=eu'), 'sqs://h/?token=**&access_key=**&region=eu')
  })

  it('masks every URL of a failover list, and passwords holding @, ? or #', () => {
    assert.equal(maskUrl('amqp://a:1@h1//;amqp://b:2@h2//'), 'amqp://a:**@h1//;amqp://b:**@h2//')
    assert.equal(maskUrl('redis://:p@ss@host/0'), 'redis://:**@host/0')
    assert.equal(maskUrl('redis://:p?ss#x@host/0'), 'redis://:**@host/0')
  })

  it('finds URLs in free text', () => {
    assert.equal(
      maskUrlsInText("cannot connect to redis://:s3@h:1/0: ECONNREFUSED ('amqp://u:p@x//')"),
      "cannot connect to redis://:**@h:1/0: ECONNREFUSED ('amqp://u:**@x//')",
    )
    assert.equal(urlHasSecret('redis://h/0?password=x'), true)
    assert.equal(urlHasSecret('redis://h/0'), false)
  })
})

describe('maskSetting / filterHiddenSettings', () => {
  it("masks broker_url and result_backend as Celery's inspect conf shows them (user:********@)", () => {
    assert.deepEqual(
      filterHiddenSettings({ broker_url: 'amqp://guest:guest@127.0.0.1:5672/v', result_backend: 'redis://:pw@127.0.0.1:6379/1' }),
      {
        broker_url: 'amqp://guest:********@127.0.0.1:5672/v',
        result_backend: 'redis://:********@127.0.0.1:6379/1',
      },
    )
  })

  it('masks what Celery 5.2.6 prints whole: any URL-valued setting, lists of URLs, ?password=', () => {
    const shown = filterHiddenSettings({
      lock_url: 'redis://:lockpw@127.0.0.1:6394/2',
      my_dsn: 'postgresql://bob:dsnpw@127.0.0.1/db',
      my_urls: ['redis://:l1pw@127.0.0.1/0', 'amqp://u:l2pw@h//'],
      my_query_url: 'redis://127.0.0.1/0?password=qpw2',
      worker_concurrency: 4,
    })
    assert.deepEqual(shown, {
      lock_url: 'redis://:********@127.0.0.1:6394/2',
      my_dsn: 'postgresql://bob:********@127.0.0.1/db',
      my_urls: ['redis://:********@127.0.0.1/0', 'amqp://u:********@h//'],
      my_query_url: 'redis://127.0.0.1/0?password=********',
      worker_concurrency: 4,
    })
  })

  it('masks secret-named keys at any depth, in mappings and in lists of mappings', () => {
    assert.deepEqual(
      maskSetting('result_backend_transport_options', {
        password: 'p',
        retry_policy: { max_retries: 1 },
        sentinel_kwargs: { password: 's' },
      }),
      {
        password: '********',
        retry_policy: { max_retries: 1 },
        sentinel_kwargs: { password: '********' },
      },
    )
    assert.deepEqual(maskSetting('things', [{ api_key: 'k', url: 'redis://:x@h/0' }]), [
      { api_key: '********', url: 'redis://:********@h/0' },
    ])
    assert.equal(maskSetting('security_key', '/path/key.pem'), '********')
  })

  it('an error line about a setting shows the masked value', () => {
    assert.equal(shownSetting('result_backend_transport_options.password', 'rbtpw'), 'result_backend_transport_options.password = ********')
    assert.equal(shownSetting('lock_url', 'redis://:pw@h/0'), 'lock_url = "redis://:********@h/0"')
    const refusals = checkBackendTransportOptions({ password: 'rbtpw', retry_policy: { max_retries: 1 } })
    assert.ok(refusals.length === 2, refusals.join('; '))
    assert.ok(!refusals.join(' ').includes('rbtpw'), refusals.join('; '))
    assert.match(refusals[0]!, /^result_backend_transport_options\.password = \*{8}: not an option/)
  })

  it('tsq report masks every URL-valued setting and ?password= in the broker URL', () => {
    const app = createApp({
      name: 'proj',
      conf: { lock_url: 'redis://:lockpw@h/2', my_dsn: 'postgresql://bob:dsnpw@h/db', my_urls: ['redis://:l1pw@h/0'] },
    })
    const text = formatReport(
      buildReport({
        version: '0.1.0',
        app,
        modulePath: '/x/app.js',
        broker: 'amqp://guest:gpw@h/v?password=qpw',
        resultBackend: 'redis://:rpw@h/1',
      }),
    )
    for (const secret of ['lockpw', 'dsnpw', 'l1pw', 'gpw', 'qpw', 'rpw']) assert.ok(!text.includes(secret), `${secret} in:\n${text}`)
    assert.match(text, /broker_url: "amqp:\/\/guest:\*{8}@h\/v\?password=\*{8}"/)
  })
})

describe('escapeControl', () => {
  it('writes control characters as Python repr does, and leaves the rest (backslashes included) alone', () => {
    assert.equal(escapeControl('a\nb\rc\td\x1b[31me\x00\x7f\x85'), 'a\\nb\\rc\\td\\x1b[31me\\x00\\x7f\\x85')
    assert.equal(escapeControl('\u2028\u202e'), '\\u2028\\u202e')
    assert.equal(escapeControl("'a\\nb'"), "'a\\nb'")
    assert.equal(escapeControl('plain-id-1234'), 'plain-id-1234')
  })

  it('a task label is one line whatever its id and name hold', () => {
    assert.equal(
      taskLabel('proj.red\x1b[31m', 'abc\n[2026-01-01 00:00:00,000: INFO/MainProcess] forged'),
      'proj.red\\x1b[31m[abc\\n[2026-01-01 00:00:00,000: INFO/MainProcess] forged]',
    )
  })

  it('a log line keeps its own newlines (tracebacks) but not ESC or CR, and masks URLs', () => {
    assert.equal(escapeControlKeepLines('Traceback:\n  at x\x1b[2J\r'), 'Traceback:\n  at x\\x1b[2J\\r')
    assert.equal(safeLine('Connected to amqp://u:p@h//\x1b]0;title\x07'), 'Connected to amqp://u:**@h//\\x1b]0;title\\x07')
  })

  it('events --dump writes one line per event, escaped', () => {
    const line = dumpEventLine(
      {
        type: 'task-received',
        hostname: 'w1@h',
        timestamp: 1700000000,
        uuid: 'abc\nforged line',
        name: 'proj.red\x1b[31m',
        args: '()',
        kwargs: '{}',
      },
      new Map(),
    )
    assert.ok(!line.includes('\n') && !line.includes('\x1b'), JSON.stringify(line))
    assert.match(line, /proj\.red\\x1b\[31m\(abc\\nforged line\)/)
  })
})

describe('redactDebugLine (DEBUG=ioredis:*)', () => {
  it("masks AUTH's arguments, HELLO ... AUTH, passwords in inspected objects and URLs", () => {
    assert.equal(
      redactDebugLine("ioredis:redis write command[127.0.0.1:6379 (x)]: 0 -> auth([ 'sekr1t' ])"),
      'ioredis:redis write command[127.0.0.1:6379 (x)]: 0 -> auth([**])',
    )
    assert.equal(redactDebugLine("0 -> hello([ '3', 'AUTH', 'default', 'sekr1t' ])"), '0 -> hello([**])')
    assert.equal(
      redactDebugLine("options { host: 'h', password: 'sekr1t', sentinelPassword: \"s2\" }"),
      "options { host: 'h', password: '**', sentinelPassword: \"**\" }",
    )
    assert.equal(redactDebugLine('connect redis://:sekr1t@h/0'), 'connect redis://:**@h/0')
    assert.equal(redactDebugLine("0 -> get([ 'k' ])"), "0 -> get([ 'k' ])")
    assert.equal(redactDebugLine("0 -> get([ 'proj.red\x1b[31m' ])"), "0 -> get([ 'proj.red\\x1b[31m' ])")
  })
})

describe("a prefork child's environment", () => {
  it('holds none of the variables through which tsq takes secrets', () => {
    const env = slotEnv(
      {
        PATH: '/bin',
        MY_OWN: 'kept',
        TSQ_BROKER_URL: 'redis://:a@h/0',
        CELERY_BROKER_URL: 'amqp://u:b@h//',
        TSQ_RESULT_BACKEND: 'redis://:c@h/1',
        CELERY_RESULT_BACKEND: 'x',
        CELERY_BROKER_WRITE_URL: 'amqp://u:d@h//',
        FLOWER_BASIC_AUTH: 'a:e',
        TSQ_DASHBOARD_BASIC_AUTH: 'a:f',
        TSQ_LOCK_URL: 'redis://:g@h/2',
        CELERY_SECURITY_KEY_PASSWORD: 'h',
        TSQ_HOME: '/home/tsq',
        CELERY_WORKER_CONCURRENCY: '4',
        TSQ_SLOT_DATA: '{}',
      },
      3,
    )
    // Variables tsq does not read itself stay: the user's config module may read them in the slot too.
    assert.deepEqual(env, {
      PATH: '/bin',
      MY_OWN: 'kept',
      TSQ_LOCK_URL: 'redis://:g@h/2',
      CELERY_SECURITY_KEY_PASSWORD: 'h',
      TSQ_HOME: '/home/tsq',
      CELERY_WORKER_CONCURRENCY: '4',
      TSQ_POOL_INDEX: '3',
    })
  })
})

describe("the dashboard's basic auth", () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-basic-auth-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('comes from the flag, the file, TSQ_DASHBOARD_BASIC_AUTH or FLOWER_BASIC_AUTH, in that order', () => {
    const file = join(dir, 'users')
    writeFileSync(file, '# users\nann:pw1\n\nbob:pw:2\n')
    chmodSync(file, 0o600)
    assert.deepEqual(resolveBasicAuth({ flag: 'x:y', env: { FLOWER_BASIC_AUTH: 'f:g' } })?.users, [{ user: 'x', pass: 'y' }])
    const fromFile = resolveBasicAuth({ file, env: { FLOWER_BASIC_AUTH: 'f:g' } })
    assert.deepEqual(fromFile?.users, [
      { user: 'ann', pass: 'pw1' },
      { user: 'bob', pass: 'pw:2' },
    ])
    assert.equal(fromFile?.warning, undefined)
    assert.deepEqual(resolveBasicAuth({ env: { TSQ_DASHBOARD_BASIC_AUTH: 't:u', FLOWER_BASIC_AUTH: 'f:g' } })?.users, [
      { user: 't', pass: 'u' },
    ])
    assert.deepEqual(resolveBasicAuth({ env: { FLOWER_BASIC_AUTH: 'f:g,h:i' } })?.users, [
      { user: 'f', pass: 'g' },
      { user: 'h', pass: 'i' },
    ])
    assert.equal(resolveBasicAuth({ env: {} }), undefined)
  })

  it('says when the file can be read by others, refuses both sources at once, and never echoes a bad entry', () => {
    const file = join(dir, 'open')
    writeFileSync(file, 'ann:pw1')
    chmodSync(file, 0o644)
    assert.match(resolveBasicAuth({ file, env: {} })?.warning ?? '', /can be read by other users \(mode 0644\): chmod 600/)
    assert.throws(() => resolveBasicAuth({ flag: 'a:b', file, env: {} }), /give one of them/)
    assert.throws(
      () => resolveBasicAuth({ env: { FLOWER_BASIC_AUTH: 'justapassword' } }),
      (e: Error) => /FLOWER_BASIC_AUTH: expected user:password/.test(e.message) && !e.message.includes('justapassword'),
    )
    assert.throws(() => resolveBasicAuth({ file: join(dir, 'missing'), env: {} }), /ENOENT/)
  })
})
