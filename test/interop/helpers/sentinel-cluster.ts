// A Redis Sentinel set-up of a test's own on 127.0.0.1: a master, a replica
// and three Sentinels (`redis-server --sentinel`), each on a free port with
// its own directory, each in its own process group, stopped by the group's
// id; and a plain Redis beside them for the test's bookkeeping. Every node
// announces 127.0.0.1, so nothing the Sentinels hand out points elsewhere.
//
// The master has min-replicas-to-write 1 (Redis's advice for Sentinel
// set-ups): the moment a failover promotes its replica, it refuses writes
// (NOREPLICAS) instead of taking writes its successor never sees. The
// replica has none, so that promoted it takes writes alone at once. One
// failover per set-up: after it the roles no longer match the settings.
import { execFile, spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './tls-brokers.js'
import { GroupProcess, sleep } from '../../helpers/process-group.js'

const run = promisify(execFile)

export const MASTER_NAME = 'mymaster'

export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 20_000 })
  return stdout.trim()
}

export interface SentinelCluster {
  dataPorts: number[]
  /** A plain Redis beside the set-up that no failover touches (the test's own bookkeeping). */
  sidePort: number
  sentinelPorts: number[]
  /** `sentinel://127.0.0.1:p1/db;sentinel://127.0.0.1:p2/db;...` */
  url(db?: number): string
  /** The port the Sentinels name as master now (asked of the first that answers). */
  masterPort(): Promise<number>
  /** `redis-cli -p <sentinel> sentinel failover mymaster`, then waits until every Sentinel names the new master and it takes writes. Once per set-up. */
  failover(): Promise<{ from: number; to: number }>
  stop(): Promise<void>
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number, procs: GroupProcess[]): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check().catch(() => false)) return
    if (Date.now() > deadline)
      throw new Error(
        `Sentinel set-up: ${what} did not happen within ${timeoutMs} ms\n${procs.map((p) => p.logTail(1500)).join('\n---\n')}`,
      )
    await sleep(200)
  }
}

export async function startSentinelCluster(dir: string): Promise<SentinelCluster> {
  mkdirSync(dir, { recursive: true })
  const dataPorts = [await freePort(), await freePort()]
  const sentinelPorts = [await freePort(), await freePort(), await freePort()]
  const sidePort = await freePort()
  const procs: GroupProcess[] = []
  const spawnNode = (args: string[]) => {
    const proc = new GroupProcess(spawn('redis-server', args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] }))
    procs.push(proc)
    return proc
  }
  const stop = async () => {
    await Promise.all(procs.map((p) => p.stopWith(() => process.kill(p.pid, 'SIGTERM'), 5_000)))
  }
  try {
    dataPorts.forEach((port, i) => {
      const nodeDir = join(dir, `redis-${port}`)
      mkdirSync(nodeDir, { recursive: true })
      spawnNode([
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        nodeDir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--replica-announce-ip',
        '127.0.0.1',
        ...(i === 0
          ? ['--min-replicas-to-write', '1', '--min-replicas-max-lag', '10']
          : ['--replicaof', '127.0.0.1', String(dataPorts[0])]),
      ])
    })
    mkdirSync(join(dir, 'side'), { recursive: true })
    spawnNode(['--port', String(sidePort), '--bind', '127.0.0.1', '--dir', join(dir, 'side'), '--save', '', '--appendonly', 'no'])
    await waitUntil(
      'the replicas in sync',
      async () => /min_slaves_good_slaves:1/.test(await redisCli(dataPorts[0]!, 'info', 'replication')),
      30_000,
      procs,
    )
    for (const port of sentinelPorts) {
      const conf = join(dir, `sentinel-${port}.conf`)
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          'sentinel announce-ip 127.0.0.1',
          'sentinel resolve-hostnames no',
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${dataPorts[0]} 2`,
          // Failovers here are asked for; a loaded machine must not start its own.
          `sentinel down-after-milliseconds ${MASTER_NAME} 10000`,
          `sentinel failover-timeout ${MASTER_NAME} 15000`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          '',
        ].join('\n'),
      )
      spawnNode([conf, '--sentinel'])
    }
    // A failover needs each Sentinel to know the replica and its two peers.
    await waitUntil(
      'the Sentinels to see the replicas and each other',
      async () => {
        for (const port of sentinelPorts) {
          const master = await redisCli(port, 'sentinel', 'master', MASTER_NAME)
          const field = (name: string) => Number(new RegExp(`^${name}\\n(\\d+)`, 'm').exec(master)?.[1] ?? -1)
          if (field('num-slaves') !== 1 || field('num-other-sentinels') !== 2) return false
        }
        return true
      },
      60_000,
      procs,
    )
  } catch (error) {
    await stop()
    throw error
  }
  const masterPort = async (): Promise<number> => {
    for (const port of sentinelPorts) {
      const out = await redisCli(port, 'sentinel', 'get-master-addr-by-name', MASTER_NAME).catch(() => '')
      const p = Number(out.split('\n')[1])
      if (p) return p
    }
    throw new Error('no Sentinel names a master')
  }
  return {
    dataPorts,
    sidePort,
    sentinelPorts,
    url: (db = 0) => sentinelPorts.map((p) => `sentinel://127.0.0.1:${p}/${db}`).join(';'),
    masterPort,
    async failover() {
      const from = await masterPort()
      // The replicas must be in sync and known to be (else NOGOODSLAVE): ask until a Sentinel takes it.
      await waitUntil(
        'a Sentinel to accept the failover',
        async () => (await redisCli(sentinelPorts[0]!, 'sentinel', 'failover', MASTER_NAME)) === 'OK',
        30_000,
        procs,
      )
      let to = from
      await waitUntil(
        'every Sentinel to name the new master',
        async () => {
          const named = await Promise.all(sentinelPorts.map((p) => redisCli(p, 'sentinel', 'get-master-addr-by-name', MASTER_NAME)))
          const ports = named.map((n) => Number(n.split('\n')[1]))
          to = ports[0]!
          return to !== from && ports.every((p) => p === to)
        },
        60_000,
        procs,
      )
      await waitUntil(
        'the new master to take writes',
        async () => (await redisCli(to, 'set', 'tsq-sentinel-probe', '1')) === 'OK',
        30_000,
        procs,
      )
      return { from, to }
    },
    stop,
  }
}
