// Private TLS brokers for test/interop/tls.test.ts: certificates made with
// openssl (a CA, a server certificate for 127.0.0.1 and localhost, a client
// certificate, and a client certificate from another CA), a Redis with
// --tls-port and --tls-auth-clients yes, and a RabbitMQ node of its own (node
// name, ports, data and log directories, HOME for its Erlang cookie) with a
// TLS listener that requires client certificates. Everything is started in
// its own process group and stopped by that group's id.
import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { GroupProcess, sleep } from '../../helpers/process-group.js'

const run = promisify(execFile)

export const RABBITMQ_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server'
export const RABBITMQCTL = '/usr/lib/rabbitmq/bin/rabbitmqctl'

export interface Certs {
  dir: string
  ca: string
  serverCert: string
  serverKey: string
  clientCert: string
  clientKey: string
  /** A client certificate from a CA the brokers do not trust. */
  otherCert: string
  otherKey: string
}

async function openssl(dir: string, args: string[]): Promise<void> {
  await run('openssl', args, { cwd: dir, timeout: 60_000 })
}

/** The user a client certificate logs in as with EXTERNAL (its CN), and the node's default user. */
export const TLS_USER = 'tsq-tls'

/** A CA, a server certificate naming 127.0.0.1 and localhost, a client certificate (CN TLS_USER), and a stranger's. */
export async function makeCerts(dir: string): Promise<Certs> {
  mkdirSync(dir, { recursive: true })
  const subj = (cn: string) => ['-subj', `/CN=${cn}`]
  await openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    ...subj('tsq test CA'),
  ])
  await openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'other-ca.key',
    '-out',
    'other-ca.pem',
    '-days',
    '2',
    ...subj('another CA'),
  ])
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  const leaf = async (name: string, cn: string, ca: string, ext?: string) => {
    await openssl(dir, ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, ...subj(cn)])
    await openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      ...(ext ? ['-extfile', ext] : []),
    ])
  }
  await leaf('server', 'localhost', 'ca', 'server.ext')
  await leaf('client', TLS_USER, 'ca')
  await leaf('other', TLS_USER, 'other-ca')
  const p = (f: string) => join(dir, f)
  return {
    dir,
    ca: p('ca.pem'),
    serverCert: p('server.pem'),
    serverKey: p('server.key'),
    clientCert: p('client.pem'),
    clientKey: p('client.key'),
    otherCert: p('other.pem'),
    otherKey: p('other.key'),
  }
}

/** A port free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

function spawnGroup(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): GroupProcess {
  return new GroupProcess(spawn(cmd, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] }))
}

export interface TlsRedis {
  port: number
  password: string
  proc: GroupProcess
  stop(): Promise<void>
}

/** redis-server with TLS only (--port 0), client certificates required, a password. */
export async function startTlsRedis(certs: Certs, password: string): Promise<TlsRedis> {
  const port = await freePort()
  const proc = spawnGroup('redis-server', [
    '--port',
    '0',
    '--tls-port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--tls-cert-file',
    certs.serverCert,
    '--tls-key-file',
    certs.serverKey,
    '--tls-ca-cert-file',
    certs.ca,
    '--tls-auth-clients',
    'yes',
    '--requirepass',
    password,
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    certs.dir,
  ])
  const deadline = Date.now() + 30_000
  while (!proc.log.includes('Ready to accept connections')) {
    if (proc.hasExited || Date.now() > deadline) {
      await proc.stopWith(() => undefined, 0)
      throw new Error(`redis-server with TLS did not start (is TLS built in?):\n${proc.logTail()}`)
    }
    await sleep(50)
  }
  return { port, password, proc, stop: () => proc.stopWith(() => process.kill(proc.pid, 'SIGTERM'), 10_000) }
}

/**
 * The environment of a RabbitMQ node of its own: its name and ports, every
 * file under `base` (rabbitmq.conf and enabled_plugins written there by the
 * caller), and `home` for its Erlang cookie (nodes of one cluster share it).
 */
export function rabbitNodeEnv(base: string, home: string, nodename: string, tcpPort: number, distPort: number): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HOME: home,
    RABBITMQ_NODENAME: nodename,
    RABBITMQ_NODE_PORT: String(tcpPort),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: join(base, 'mnesia'),
    RABBITMQ_LOG_BASE: join(base, 'log'),
    RABBITMQ_CONFIG_FILE: join(base, 'rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(base, 'advanced.config'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(base, 'enabled_plugins'),
    RABBITMQ_PLUGINS_EXPAND_DIR: join(base, 'plugins-expand'),
    RABBITMQ_PID_FILE: join(base, 'pid'),
  }
}

export interface TlsRabbit {
  nodename: string
  tlsPort: number
  env: NodeJS.ProcessEnv
  proc: GroupProcess
  ready: Promise<void>
  ctl(args: string[]): Promise<string>
  stop(): Promise<void>
}

/**
 * A RabbitMQ node of its own: TLS listener with verify_peer and
 * fail_if_no_peer_cert, EXTERNAL login by the certificate's CN (the
 * rabbitmq_auth_mechanism_ssl plugin; the client certificate's CN is the
 * node's default user TLS_USER, whose password is `password`), its own HOME so it has its own Erlang
 * cookie. `ready` resolves when the node runs (about a minute on a busy machine).
 */
export async function startTlsRabbit(certs: Certs, password: string): Promise<TlsRabbit> {
  const base = join(certs.dir, 'rabbit')
  mkdirSync(join(base, 'home'), { recursive: true })
  const [tcpPort, tlsPort, distPort] = [await freePort(), await freePort(), await freePort()]
  const nodename = `tsq-tls-${process.pid}@localhost`
  writeFileSync(
    join(base, 'rabbitmq.conf'),
    [
      `listeners.tcp.default = 127.0.0.1:${tcpPort}`,
      `listeners.ssl.default = 127.0.0.1:${tlsPort}`,
      `ssl_options.cacertfile = ${certs.ca}`,
      `ssl_options.certfile = ${certs.serverCert}`,
      `ssl_options.keyfile = ${certs.serverKey}`,
      'ssl_options.verify = verify_peer',
      'ssl_options.fail_if_no_peer_cert = true',
      'auth_mechanisms.1 = PLAIN',
      'auth_mechanisms.2 = AMQPLAIN',
      'auth_mechanisms.3 = EXTERNAL',
      'ssl_cert_login_from = common_name',
      'loopback_users = none',
      // The user is made at first boot: no rabbitmqctl round trips (seconds each on a busy machine).
      `default_user = ${TLS_USER}`,
      `default_pass = ${password}`,
      '',
    ].join('\n'),
  )
  writeFileSync(join(base, 'enabled_plugins'), '[rabbitmq_auth_mechanism_ssl].\n')
  const env = rabbitNodeEnv(base, join(base, 'home'), nodename, tcpPort, distPort)
  const proc = spawnGroup(RABBITMQ_SERVER, [], env)
  const ctl = async (args: string[]): Promise<string> => {
    const { stdout } = await run(RABBITMQCTL, ['-n', nodename, ...args], { env, timeout: 240_000 })
    return stdout
  }
  const ready = (async () => {
    // `wait` returns once the pid file's node runs its applications, or fails when it died.
    for (let i = 0; i < 60 && !existsSync(join(base, 'pid')); i++) {
      if (proc.hasExited) throw new Error(`rabbitmq-server exited:\n${proc.logTail()}`)
      await sleep(500)
    }
    await ctl(['wait', '--timeout', '200', join(base, 'pid')]).catch((error: Error) => {
      throw new Error(`RabbitMQ node ${nodename} did not start: ${error.message}\n${proc.logTail()}`)
    })
  })()
  ready.catch(() => undefined)
  const stop = async () => {
    // A graceful stop lets the node close its files; the group's KILL is the backstop.
    if (!proc.hasExited) await ctl(['stop']).catch(() => undefined)
    await proc.stopWith(() => process.kill(proc.pid, 'SIGTERM'), 15_000)
  }
  return { nodename, tlsPort, env, proc, ready, ctl, stop }
}

/** Starts `cmd` in its own group with a log kept; resolves once `readyText` appears. */
export async function startLogged(
  cmd: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd: string; readyText?: string; timeoutMs?: number },
): Promise<GroupProcess> {
  const proc = new GroupProcess(spawn(cmd, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] }))
  if (options.readyText === undefined) return proc
  const deadline = Date.now() + (options.timeoutMs ?? 90_000)
  while (!proc.log.includes(options.readyText)) {
    if (proc.hasExited || Date.now() > deadline) {
      await proc.stopWith(() => undefined, 0)
      throw new Error(
        `${cmd} ${args.join(' ')}: no "${options.readyText}" ${proc.hasExited ? '(it exited)' : 'in time'}:\n${proc.logTail()}`,
      )
    }
    await sleep(100)
  }
  return proc
}
