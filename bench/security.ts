// What Celery's message signing adds per task, tsq beside Python Celery 5.2.6
// in the same run, with the same 2048-bit RSA key and sha256:
//
//   sign-added     writing a task body with the auth serializer, minus with json
//                  (tsq: encodeTaskV2With; Celery: kombu dumps via setup_security)
//   verify-added   reading it back with auth (signature checked), minus json
//                  (tsq: decodeTaskMessage with the store; Celery: kombu loads)
//
//   npm run build && node --import tsx bench/security.ts [--tasks 2000] [--repeats 5] [--json]
//
// Method: both sides run in one process each, no broker: the broker's share of
// a task is the same signed or not, and on a shared machine it would drown the
// difference. Each figure is the median over REPEATS runs of TASKS messages,
// in microseconds per task. Target (issue 29): tsq's added cost at most half of
// Celery's. Certificates are made by openssl in a temp dir, removed at the end.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { performance } from 'node:perf_hooks'
import { loadCertStore, loadSigner } from '../src/config/security.js'
import { acceptContent, decodeTaskMessage, encodeTaskV2With, type BodyDecoder, type BodyEncoder } from '../src/protocol/index.js'
import { benchEnv, formatEnv } from './lib/env.js'
import { median } from './lib/measure.js'

const PYTHON = '/usr/bin/python3'
const PEER = resolve(import.meta.dirname, 'peers/security_cost.py')
const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '2000' },
    repeats: { type: 'string', default: '5' },
    json: { type: 'boolean', default: false },
  },
})
const N = Number(values.tasks)
const REPEATS = Number(values.repeats)

const dir = mkdtempSync(join(tmpdir(), 'tsq-bench-sec-'))
try {
  const key = join(dir, 'k.pem')
  const cert = join(dir, 'c.pem')
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=bench'],
    { stdio: 'ignore' },
  )

  const signer = loadSigner(key, cert, 'sha256')
  const { store } = loadCertStore(cert)
  const args = [2, 3]
  const kwargs = { name: 'h\u00e9llo', n: 123456789 }
  const json: BodyEncoder = { serializer: 'json' }
  const auth: BodyEncoder = { serializer: 'auth', signer, inner: 'json' }
  const readJson: BodyDecoder = { accept: acceptContent(['json']) }
  const readAuth: BodyDecoder = { accept: acceptContent(['auth']), verify: { store, digest: 'sha256' } }
  const send = (enc: BodyEncoder) => encodeTaskV2With('bench.add', { id: 'b', args, kwargs, origin: 'gen@bench' }, enc)
  const plainMsg = send(json)
  const signedMsg = send(auth)

  const perTaskUs = (fn: () => unknown): number => {
    for (let i = 0; i < N; i++) fn()
    const runs: number[] = []
    for (let r = 0; r < REPEATS; r++) {
      const t0 = performance.now()
      for (let i = 0; i < N; i++) fn()
      runs.push(((performance.now() - t0) / N) * 1000)
    }
    return median(runs)
  }
  const tsq = {
    send_json_us: perTaskUs(() => send(json)),
    send_auth_us: perTaskUs(() => send(auth)),
    recv_json_us: perTaskUs(() =>
      decodeTaskMessage({
        headers: plainMsg.headers,
        body: plainMsg.body,
        contentType: plainMsg.contentType,
        contentEncoding: plainMsg.contentEncoding,
        decoder: readJson,
      }),
    ),
    recv_auth_us: perTaskUs(() =>
      decodeTaskMessage({
        headers: signedMsg.headers,
        body: signedMsg.body,
        contentType: signedMsg.contentType,
        contentEncoding: signedMsg.contentEncoding,
        decoder: readAuth,
      }),
    ),
  }
  const peer = JSON.parse(
    execFileSync(PYTHON, [PEER, key, cert, cert, String(N), String(REPEATS)], { encoding: 'utf8', timeout: 600_000 }),
  ) as typeof tsq

  const figures = [
    { name: 'sign-added', tsq: tsq.send_auth_us - tsq.send_json_us, peer: peer.send_auth_us - peer.send_json_us },
    { name: 'verify-added', tsq: tsq.recv_auth_us - tsq.recv_json_us, peer: peer.recv_auth_us - peer.recv_json_us },
    {
      name: 'sign+verify-added',
      tsq: tsq.send_auth_us - tsq.send_json_us + tsq.recv_auth_us - tsq.recv_json_us,
      peer: peer.send_auth_us - peer.send_json_us + peer.recv_auth_us - peer.recv_json_us,
    },
  ]
  const env = benchEnv(PYTHON)
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ env, tasks: N, repeats: REPEATS, tsq, peer, figures: figures.map((f) => ({ ...f, ratio: f.tsq / f.peer })) })}\n`,
    )
  } else {
    process.stdout.write(`${formatEnv(env)}\n`)
    for (const f of figures) {
      process.stdout.write(
        `${f.name}  tsq=${f.tsq.toFixed(1)}us  peer=${f.peer.toFixed(1)}us  ratio=${(f.tsq / f.peer).toFixed(2)}   (peer: Celery 5.2.6 auth serializer, per task, median of ${REPEATS} x ${N}; target ratio <= 0.50)\n`,
      )
    }
    const raw = (s: typeof tsq) =>
      `send json=${s.send_json_us.toFixed(1)}us auth=${s.send_auth_us.toFixed(1)}us, receive json=${s.recv_json_us.toFixed(1)}us auth=${s.recv_auth_us.toFixed(1)}us`
    process.stdout.write(`  tsq:  ${raw(tsq)}\n  peer: ${raw(peer)}\n`)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
