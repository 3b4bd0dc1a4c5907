// How a URL and Celery's broker_use_ssl / redis_backend_use_ssl become
// Node's tls options (src/transport/tls.ts), and the one-line reasons a TLS
// failure is reported with. Nothing here connects; certificate "files" are
// small temporary files whose contents are checked to be passed, never printed.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createApp } from '../../../src/app/app.js'
import { filterHiddenSettings } from '../../../src/config/hidden-settings.js'
import { amqpConnectSettings } from '../../../src/transport/amqp/connection/connect-options.js'
import { describeTlsFailure, describeTlsPlan, maskUrl, parseCertReqs, tlsConnectOptions, tlsPlan } from '../../../src/transport/index.js'
import { resolveRedisOptions } from '../../../src/transport/redis/options.js'

const dir = mkdtempSync(join(tmpdir(), 'tsq-tls-unit-'))
after(() => rmSync(dir, { recursive: true, force: true }))
const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}
const ca = file('ca.pem', 'CA-PEM')
const cert = file('client.pem', 'CLIENT-PEM')
const key = file('client.key', '-----BEGIN PRIVATE KEY----- secret')

describe('[tls] plan: URL parameters and Celery settings', () => {
  it('plain schemes have no TLS unless the setting asks; rediss:// and amqps:// always do, verifying by default', () => {
    assert.equal(tlsPlan('redis://127.0.0.1:6379/0'), null)
    assert.equal(tlsPlan('amqp://h//', null), null)
    assert.deepEqual(tlsPlan('rediss://h:6390/0'), {
      certReqs: 'required',
      caCerts: undefined,
      certfile: undefined,
      keyfile: undefined,
      serverHostname: undefined,
    })
    assert.equal(tlsPlan('amqps://h//')?.certReqs, 'required')
    assert.equal(tlsPlan('amqp://h//', true)?.certReqs, 'required')
  })

  it("redis-py's ssl_* query parameters, on rediss:// and amqps://, win over the setting", () => {
    const plan = tlsPlan(`rediss://h/0?ssl_cert_reqs=CERT_OPTIONAL&ssl_ca_certs=${ca}&ssl_certfile=${cert}&ssl_keyfile=${key}`, {
      ca_certs: '/elsewhere.pem',
      cert_reqs: 'none',
    })
    assert.deepEqual(plan, { certReqs: 'optional', caCerts: ca, certfile: cert, keyfile: key, serverHostname: undefined })
    assert.equal(tlsPlan(`amqps://h//?ssl_certfile=${cert}`, { ca_certs: ca })?.caCerts, ca)
  })

  it("cert_reqs takes Celery's spellings and Python's ssl constants; anything else is a bad URL (exit 64)", () => {
    for (const [value, expected] of [
      ['required', 'required'],
      ['CERT_REQUIRED', 'required'],
      ['ssl.CERT_NONE', 'none'],
      ['Optional', 'optional'],
      [0, 'none'],
      [1, 'optional'],
      [2, 'required'],
    ] as const) {
      assert.equal(parseCertReqs(value, 'x'), expected)
    }
    assert.throws(
      () => tlsPlan('rediss://:pw@h/0?ssl_cert_reqs=maybe'),
      (e: Error & { code?: string }) =>
        e.code === 'BAD_URL' && /cert_reqs must be required, optional or none/.test(e.message) && !e.message.includes('pw@'),
    )
  })
})

describe('[tls] Node options', () => {
  it('reads the CA, certificate and key; checks the host name; names the server by SNI only when it is not an IP', () => {
    const options = tlsConnectOptions({ certReqs: 'required', caCerts: ca, certfile: cert, keyfile: key }, 'broker.example', 'rediss://h/0')
    assert.equal(String(options.ca), 'CA-PEM')
    assert.equal(String(options.cert), 'CLIENT-PEM')
    assert.match(String(options.key), /PRIVATE KEY/)
    assert.equal(options.rejectUnauthorized, true)
    assert.equal(options.servername, 'broker.example')
    const mismatch = options.checkServerIdentity!('broker.example', {
      subject: { CN: 'other.example' },
      subjectaltname: 'DNS:other.example',
    } as never)
    assert.ok(mismatch instanceof Error, 'a certificate for another name is refused')
    assert.equal(tlsConnectOptions({ certReqs: 'required' }, '127.0.0.1', 'rediss://h/0').servername, undefined)
  })

  it('cert_reqs=none is the only way verification goes off, and it says so', () => {
    const options = tlsConnectOptions({ certReqs: 'none' }, 'h', 'rediss://h/0')
    assert.equal(options.rejectUnauthorized, false)
    assert.equal(options.checkServerIdentity!('h', {} as never), undefined)
    assert.match(describeTlsPlan({ certReqs: 'none' })!, /verification OFF \(cert_reqs=none\)/)
    assert.equal(tlsConnectOptions({ certReqs: 'optional' }, 'h', 'rediss://h/0').rejectUnauthorized, true)
  })

  it('an unreadable file is one line with its path and the masked URL, never its contents', () => {
    assert.throws(
      () => tlsConnectOptions({ certReqs: 'required', caCerts: join(dir, 'missing.pem') }, 'h', 'amqps://u:s3cret@h//'),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'BAD_URL')
        assert.equal(e.message, `amqps://u:**@h//: cannot read ca_certs ${join(dir, 'missing.pem')}: no such file`)
        return true
      },
    )
    assert.throws(() => tlsConnectOptions({ certReqs: 'required', keyfile: key }, 'h', 'rediss://h/0'), /a keyfile needs its certfile/)
  })
})

describe('[tls] settings reach every connection', () => {
  it("the app's broker_use_ssl, broker_login_method and redis_backend_use_ssl", () => {
    const app = createApp({
      name: 'p',
      conf: { broker_use_ssl: { ca_certs: ca, cert_reqs: 'required' }, broker_login_method: 'EXTERNAL', redis_backend_use_ssl: true },
    })
    assert.deepEqual(app.transportSettings, { ssl: { ca_certs: ca, cert_reqs: 'required' }, loginMethod: 'EXTERNAL' })
    assert.equal(app.backendSsl, true)
    assert.throws(
      () => createApp({ name: 'p', conf: { broker_use_ssl: 'yes' } }).transportSettings,
      /broker_use_ssl must be true or an object/,
    )
  })

  it('Redis: redis:// with the setting connects over TLS; rediss:// reads its parameters', () => {
    assert.equal(resolveRedisOptions('redis://h/0').tls, null)
    assert.equal(resolveRedisOptions('redis://h/0', { ssl: { ca_certs: ca } }).tls?.caCerts, ca)
    assert.equal(resolveRedisOptions(`rediss://h/0?ssl_certfile=${cert}`).tls?.certfile, cert)
  })

  it('AMQP: amqp:// with broker_use_ssl becomes amqps on 5671; login_method=EXTERNAL needs a client certificate', () => {
    const s = amqpConnectSettings('amqp://h//', { ssl: { ca_certs: ca } })
    assert.equal(s.connect.protocol, 'amqps')
    assert.equal(s.connect.port, 5671)
    assert.equal(s.external, false)
    assert.equal(amqpConnectSettings(`amqps://h//?ssl_certfile=${cert}&ssl_keyfile=${key}&login_method=EXTERNAL`).external, true)
    assert.equal(amqpConnectSettings(`amqps://h//?ssl_certfile=${cert}`, { loginMethod: 'external' }).external, true)
    assert.throws(
      () => amqpConnectSettings('amqps://u:pw@h//?login_method=EXTERNAL'),
      (e: Error) => /EXTERNAL needs a client certificate/.test(e.message) && !e.message.includes(':pw@'),
    )
    assert.throws(() => amqpConnectSettings('amqps://h//?login_method=KERBEROS'), /bad login_method/)
  })
})

describe('[tls] failure reasons', () => {
  const err = (code: string, message = code) => Object.assign(new Error(message), { code })
  it("names unknown CA, expiry, name mismatch and the server's refusals; other errors are not TLS", () => {
    assert.match(
      describeTlsFailure(err('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'))!,
      /not signed by a trusted CA \(unknown CA/,
    )
    assert.match(describeTlsFailure(err('UNABLE_TO_VERIFY_LEAF_SIGNATURE'))!, /unknown CA/)
    assert.match(describeTlsFailure(err('CERT_HAS_EXPIRED'))!, /expired/)
    assert.match(
      describeTlsFailure(
        err(
          'ERR_TLS_CERT_ALTNAME_INVALID',
          "Hostname/IP does not match certificate's altnames: IP: 10.0.0.1 is not in the cert's list: 127.0.0.1",
        ),
      )!,
      /name mismatch: IP: 10\.0\.0\.1/,
    )
    assert.match(
      describeTlsFailure(err('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'))!,
      /requires a client certificate \(no client certificate sent\)/,
    )
    assert.match(describeTlsFailure(err('ERR_SSL_TLSV1_ALERT_UNKNOWN_CA'))!, /refused our client certificate \(unknown CA\)/)
    assert.match(describeTlsFailure(err('ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED'))!, /client certificate \(expired\)/)
    assert.equal(describeTlsFailure(err('ECONNREFUSED')), undefined)
    assert.equal(describeTlsFailure('text'), undefined)
  })
})

describe('[secrets] masking as Celery masks them', () => {
  it("maskUrl keeps the user and hides the password; Celery's inspect conf mask is eight asterisks", () => {
    assert.equal(maskUrl('amqp://guest:guest@h//'), 'amqp://guest:**@h//')
    assert.equal(maskUrl('rediss://:pw@h:6390/0?ssl_cert_reqs=required'), 'rediss://:**@h:6390/0?ssl_cert_reqs=required')
    assert.equal(maskUrl('redis://h/0'), 'redis://h/0')
    assert.equal(maskUrl('amqp://u:p@h//', '********'), 'amqp://u:********@h//')
  })

  it('filterHiddenSettings: names with API/TOKEN/KEY/SECRET/PASS/SIGNATURE/DATABASE, URLs under broker_url and *backend*, nested settings', () => {
    const shown = filterHiddenSettings({
      broker_url: 'amqp://u:p4ss@h//',
      result_backend: 'redis://:p4ss@h/1',
      security_key: '/etc/key.pem',
      my_api_token: 'abc',
      broker_use_ssl: { ca_certs: '/ca.pem', keyfile: '/k.pem', certfile: '/c.pem' },
      task_default_queue: 'q',
    })
    assert.deepEqual(shown, {
      broker_url: 'amqp://u:********@h//',
      result_backend: 'redis://:********@h/1',
      security_key: '********',
      my_api_token: '********',
      broker_use_ssl: { ca_certs: '/ca.pem', keyfile: '********', certfile: '/c.pem' },
      task_default_queue: 'q',
    })
  })
})
