// Test certificates made with openssl in a temp dir (no private key is ever
// committed): a CA, signers it issued (tsq's, Python's, an expired one) and a
// signer from another CA that no store holds.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface SignerFiles {
  key: string
  cert: string
}

export interface TestCerts {
  dir: string
  /** Every certificate a tsq worker trusts (valid and expired): `store/*.pem`. */
  storeGlob: string
  /** The valid ones only (`store/v-*.pem`): Celery refuses to start on an expired certificate. */
  validStoreGlob: string
  tsq: SignerFiles
  python: SignerFiles
  expired: SignerFiles
  /** Issued by another CA; in no store. */
  stranger: SignerFiles
  cleanup(): void
}

/** Fails loudly under CI when openssl is missing; elsewhere returns a skip reason. */
export function opensslSkipReason(): string | false {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' })
    return false
  } catch {
    const reason = 'openssl is not installed; the signing tests make their certificates with it'
    if (process.env.CI) throw new Error(`CI requires openssl: ${reason}`)
    return reason
  }
}

function ossl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] })
}

function issue(dir: string, name: string, subject: string, ca: { key: string; cert: string }, days: number, bits = 2048): SignerFiles {
  const key = join(dir, `${name}.key`)
  ossl(['genrsa', '-out', key, String(bits)], dir)
  ossl(['req', '-new', '-key', key, '-subj', subject, '-out', join(dir, `${name}.csr`)], dir)
  const cert = join(dir, 'store', `${name}.pem`)
  ossl(
    [
      'x509',
      '-req',
      '-in',
      join(dir, `${name}.csr`),
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-days',
      String(days),
      '-sha256',
      '-out',
      cert,
    ],
    dir,
  )
  return { key, cert }
}

function makeCa(dir: string, name: string, subject: string): { key: string; cert: string } {
  const key = join(dir, `${name}.key`)
  const cert = join(dir, `${name}.pem`)
  ossl(['req', '-utf8', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', subject], dir)
  return { key, cert }
}

export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-sec-'))
  mkdirSync(join(dir, 'store'))
  mkdirSync(join(dir, 'elsewhere'))
  // An issuer with a comma and non-ASCII: Celery's signer id joins the raw values.
  const ca = makeCa(dir, 'ca', '/C=FR/O=tsq test\\, signing/CN=Test CA \u00e9t\u00e9')
  const other = makeCa(dir, 'other-ca', '/CN=Another CA')
  const tsq = issue(dir, 'v-tsq', '/CN=tsq client', ca, 2)
  // A 4096-bit key: Celery finds the signature's length from the certificate's key size.
  const python = issue(dir, 'v-python', '/CN=python client', ca, 2, 4096)
  const expired = issue(dir, 'expired', '/CN=expired client', ca, -1)
  const strangerTmp = issue(dir, 'stranger', '/CN=stranger', other, 2)
  const stranger = { key: strangerTmp.key, cert: join(dir, 'elsewhere', 'stranger.pem') }
  execFileSync('mv', [strangerTmp.cert, stranger.cert])
  return {
    dir,
    storeGlob: join(dir, 'store', '*.pem'),
    validStoreGlob: join(dir, 'store', 'v-*.pem'),
    tsq,
    python,
    expired,
    stranger,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}
