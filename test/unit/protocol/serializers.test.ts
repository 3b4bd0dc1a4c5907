// tsq-test: slow (it makes RSA keys)
// kombu's serializers (msgpack, yaml, accept lists, pickle) and Celery's auth
// serializer against bytes captured from Celery 5.2.6
// (test/fixtures/wire/security/celery-auth.json: public certificate only).
import assert from 'node:assert/strict'
import { X509Certificate, generateKeyPairSync } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import {
  ContentDisallowedError,
  PickleRefusedError,
  SecurityError,
  acceptContent,
  certificateId,
  decodeBody,
  decodeTaskMessage,
  deserialize,
  encodeBody,
  encodeTaskV2With,
  serialize,
  signAndPack,
  storeCertificate,
  unpackAndVerify,
  type CertStore,
  type StoreCertificate,
} from '../../../src/protocol/index.js'

const fixture = JSON.parse(readFileSync(new URL('../../fixtures/wire/security/celery-auth.json', import.meta.url), 'utf8')) as Record<
  string,
  string
>
const cert = new X509Certificate(fixture.cert!)
const celeryStore: CertStore = { get: (id) => (id === fixture.signer ? storeCertificate(cert) : undefined) }
const EMBED = { callbacks: null, errbacks: null, chain: null, chord: null }

/** A key pair and a store entry for it, no certificate needed (the store holds what verify uses). */
function fakeSigner(id: string, notAfter = new Date(Date.now() + 86_400_000), bits = 2048) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits })
  const entry: StoreCertificate = { id, publicKey, signatureBytes: bits >> 3, notAfter }
  return { signer: { key: privateKey, id, digest: 'sha256' }, entry }
}

describe('msgpack and yaml as kombu registers them', () => {
  it('msgpack: the bytes Python packs for 8/16/32/64-bit edges, unicode and bytes', () => {
    const value = [
      [0, 127, 128, -32, -33, -128, -129, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 64n - 1n],
      { s: 'h\u00e9\u{1F600}', b: new Uint8Array([0, 0xff]) },
      null,
    ]
    assert.equal(serialize('msgpack', value).body.toString('hex'), fixture.msgpack_hex)
    assert.deepEqual(deserialize(Buffer.from(fixture.msgpack_hex!, 'hex'), 'application/x-msgpack', 'binary', null), value)
    assert.deepEqual(serialize('msgpack', []), {
      contentType: 'application/x-msgpack',
      contentEncoding: 'binary',
      body: Buffer.from([0x90]),
    })
  })

  it('yaml: PyYAML safe_dump output reads back as Python meant it (YAML 1.1 look-alike strings stay strings)', () => {
    const value = [[1, 2n ** 64n - 1n, 'yes', '0777', 1.5, null, true, 'h\u00e9'], { k: '~' }, null]
    assert.deepEqual(deserialize(fixture.yaml!, 'application/x-yaml', 'utf-8', null), value)
    const written = serialize('yaml', value)
    assert.equal(written.contentType, 'application/x-yaml')
    assert.deepEqual(deserialize(written.body, 'application/x-yaml', 'utf-8', null), value)
    assert.match(written.body.toString(), /['"]yes['"]/)
  })

  it('accept_content: JSON alone unless configured, names or content types, refused in kombu words', () => {
    assert.deepEqual([...acceptContent(undefined)], ['application/json'])
    assert.deepEqual([...acceptContent(['msgpack', 'application/x-yaml'])], ['application/x-msgpack', 'application/x-yaml'])
    const body = serialize('msgpack', [[1], {}, EMBED]).body
    assert.throws(() => decodeTaskMessage({ headers: { task: 't', id: 'i' }, body, contentType: 'application/x-msgpack' }), {
      message: 'Refusing to deserialize untrusted content of type msgpack (application/x-msgpack)',
    })
    const ok = decodeTaskMessage({
      headers: { task: 't', id: 'i' },
      body,
      contentType: 'application/x-msgpack',
      decoder: { accept: acceptContent(['msgpack']) },
    })
    assert.deepEqual(ok.args, [1])
    assert.throws(() => decodeBody('[]', 'application/json', 'utf-8', { accept: acceptContent(['msgpack']) }), ContentDisallowedError)
  })

  it('pickle is never decoded, whatever accept_content says', () => {
    assert.throws(
      () => decodeBody(Buffer.from([0x80, 0x04]), 'application/x-python-serialize', 'binary', { accept: acceptContent(['pickle']) }),
      PickleRefusedError,
    )
  })

  it('a malformed msgpack or yaml body is a MalformedMessageError, not a crash', () => {
    assert.throws(() => deserialize(Buffer.from([0xc1]), 'application/x-msgpack', 'binary', null), /not valid msgpack/)
    assert.throws(() => deserialize('a: [1, 2', 'application/x-yaml', 'utf-8', null), /not valid YAML/)
  })
})

describe("Celery's auth serializer, byte for byte", () => {
  it('certificate id: issuer values joined by spaces (comma kept), then the decimal serial, as Celery computes it', () => {
    assert.equal(certificateId(cert), fixture.signer)
  })

  it('a Celery-signed JSON body verifies and decodes; so does a Celery-signed msgpack body', () => {
    const expected = [[2, 3, 'h\u00e9'], { n: 2n ** 63n - 1n }, EMBED]
    const inner = unpackAndVerify(fixture.signed_json!, celeryStore, 'sha256')
    assert.equal(inner.contentType, 'application/json')
    assert.deepEqual(
      decodeBody(fixture.signed_json!, 'application/data', 'utf-8', {
        accept: acceptContent(['auth']),
        verify: { store: celeryStore, digest: 'sha256' },
      }),
      expected,
    )
    assert.deepEqual(
      decodeBody(fixture.signed_msgpack!, 'application/data', 'utf-8', {
        accept: acceptContent(['auth']),
        verify: { store: celeryStore, digest: 'sha256' },
      }),
      expected,
    )
  })

  it('one byte changed anywhere in the body, an unknown signer, an expired one and no store are refused', () => {
    const raw = Buffer.from(fixture.signed_json!, 'base64')
    raw[raw.length - 3] ^= 1
    assert.throws(
      () => unpackAndVerify(raw.toString('base64'), celeryStore, 'sha256'),
      (e: unknown) =>
        e instanceof SecurityError && e.message === "Unable to deserialize: SecurityError('Bad signature: InvalidSignature()')",
    )
    assert.throws(
      () => unpackAndVerify(fixture.signed_json!, { get: () => undefined }, 'sha256'),
      /Unknown certificate: b'FR tsq fixture, signing/,
    )
    const lapsed: CertStore = { get: () => ({ ...storeCertificate(cert), notAfter: new Date(0) }) }
    assert.throws(() => unpackAndVerify(fixture.signed_json!, lapsed, 'sha256'), /Expired certificate/)
    assert.throws(
      () => decodeBody(fixture.signed_json!, 'application/data', 'utf-8', { accept: acceptContent(['auth']) }),
      /no security settings/,
    )
    assert.throws(() => unpackAndVerify(fixture.signed_json!, celeryStore, 'sha512'), /Bad signature/)
  })

  it('tsq signs the envelope Celery unpacks: signer, PSS signature of the key size, inner type, encoding, body', () => {
    const { signer, entry } = fakeSigner('My CA 42', undefined, 3072)
    const store: CertStore = { get: (id) => (id === entry.id ? entry : undefined) }
    const m = encodeTaskV2With('t.add', { args: [1, 2], origin: 'o' }, { serializer: 'auth', signer, inner: 'json' })
    assert.equal(m.contentType, 'application/data')
    assert.equal(m.contentEncoding, 'utf-8')
    const raw = Buffer.from(m.body.toString('latin1'), 'base64')
    const sep = Buffer.from([0, 1])
    assert.equal(raw.subarray(0, raw.indexOf(sep)).toString(), 'My CA 42')
    const tail = raw.subarray('My CA 42'.length + 2 + 384 + 2)
    assert.equal(
      tail.toString('latin1'),
      'application/json\x00\x01utf-8\x00\x01[[1, 2], {}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]',
    )
    const req = decodeTaskMessage({
      headers: m.headers,
      body: m.body,
      contentType: m.contentType,
      decoder: { accept: acceptContent(['auth']), verify: { store, digest: 'sha256' } },
    })
    assert.deepEqual(req.args, [1, 2])
    // Two signatures of the same body differ (PSS salts it), both verify.
    assert.notEqual(
      signAndPack(signer, { contentType: 'application/json', contentEncoding: 'utf-8', body: Buffer.from('[]') }),
      signAndPack(signer, { contentType: 'application/json', contentEncoding: 'utf-8', body: Buffer.from('[]') }),
    )
  })

  it('auth with no key loaded cannot send', () => {
    assert.throws(() => encodeBody([], { serializer: 'auth' }), /no key is loaded/)
  })
})
