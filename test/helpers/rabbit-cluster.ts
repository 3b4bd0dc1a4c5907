// A RabbitMQ cluster of its own for the cluster tests: N rabbitmq-server nodes
// on 127.0.0.1, each with its own node name, AMQP and distribution ports, data
// and log directories, sharing one Erlang cookie (a HOME of their own), joined
// with `rabbitmqctl join_cluster`. The nodes boot in parallel (a node takes
// about a minute on a loaded machine); each runs in its own process group and
// is stopped by that group's id.
import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort, rabbitNodeEnv, RABBITMQCTL, RABBITMQ_SERVER } from '../interop/helpers/tls-brokers.js'
import { GroupProcess, sleep } from './process-group.js'

const run = promisify(execFile)

export interface RabbitNode {
  name: string
  port: number
  url: string
  proc: GroupProcess
  env: NodeJS.ProcessEnv
  base: string
  /** rabbitmqctl against this node. */
  ctl(args: string[], timeoutMs?: number): Promise<string>
  /** A graceful stop of this node (rabbitmqctl stop), the group's KILL as backstop. */
  stop(): Promise<void>
}

export interface RabbitCluster {
  nodes: RabbitNode[]
  /** The failover list, as kombu reads it: `url1;url2;url3`. */
  urlList: string
  /** Stops every node (those still running), by group. */
  stop(): Promise<void>
}

/** Skips (or fails, in CI) when this machine cannot run a RabbitMQ node of its own. */
export function clusterSkipReason(): string | false {
  if (existsSync(RABBITMQ_SERVER) && existsSync(RABBITMQCTL)) return false
  const reason = `${RABBITMQ_SERVER} not installed; skipping the RabbitMQ cluster tests`
  if (process.env.CI) throw new Error(`CI requires rabbitmq-server for the cluster tests: ${reason}`)
  process.stderr.write(`SKIP: ${reason}\n`)
  return reason
}

async function bootNode(dir: string, cookieHome: string, index: number, tag: string, conf: string[]): Promise<RabbitNode> {
  const base = join(dir, `n${index}`)
  mkdirSync(base, { recursive: true })
  const [port, distPort] = [await freePort(), await freePort()]
  const name = `tsq-c${index}-${tag}@localhost`
  writeFileSync(
    join(base, 'rabbitmq.conf'),
    [
      `listeners.tcp.default = 127.0.0.1:${port}`,
      'loopback_users = none',
      // A lost node is noticed in seconds, not the default minute.
      'net_ticktime = 10',
      // Quorum queues need a majority: with 3 nodes, 2 must be up; no node is paused on a partition here.
      'cluster_partition_handling = ignore',
      ...conf,
      '',
    ].join('\n'),
  )
  writeFileSync(join(base, 'enabled_plugins'), '[].\n')
  const env = rabbitNodeEnv(base, cookieHome, name, port, distPort)
  const ctl = async (args: string[], timeoutMs = 240_000): Promise<string> => {
    const { stdout } = await run(RABBITMQCTL, ['-n', name, ...args], { env, timeout: timeoutMs })
    return stdout
  }
  const node: RabbitNode = {
    name,
    port,
    url: `amqp://guest:guest@127.0.0.1:${port}//`,
    proc: spawnNode(env, base),
    env,
    base,
    ctl,
    stop: async () => {
      if (!node.proc.hasExited) await ctl(['stop'], 120_000).catch(() => undefined)
      await node.proc.stopWith(() => process.kill(node.proc.pid, 'SIGTERM'), 15_000)
    },
  }
  await waitRunning(node)
  return node
}

/** In its own folder: a node that dies writes its crash dumps (MnesiaCore.*) where it runs. */
function spawnNode(env: NodeJS.ProcessEnv, cwd: string): GroupProcess {
  return new GroupProcess(spawn(RABBITMQ_SERVER, [], { env, cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] }))
}

async function waitRunning(node: RabbitNode): Promise<void> {
  for (let i = 0; i < 120 && !existsSync(join(node.base, 'pid')); i++) {
    if (node.proc.hasExited) throw new Error(`rabbitmq-server ${node.name} exited:\n${node.proc.logTail()}`)
    await sleep(500)
  }
  await node.ctl(['wait', '--timeout', '200', join(node.base, 'pid')]).catch((error: Error) => {
    throw new Error(`RabbitMQ node ${node.name} did not start: ${error.message}\n${node.proc.logTail()}`)
  })
}

/**
 * Boots `size` nodes in parallel, then joins nodes 2..N to node 1. Any failure
 * stops whatever started, so a broken start leaves no node behind. `conf` adds
 * rabbitmq.conf lines to every node (a test that needs a node-wide setting, or
 * restarts its broker, takes a node of its own instead of changing the shared one).
 */
export async function startRabbitCluster(dir: string, size = 3, conf: string[] = []): Promise<RabbitCluster> {
  const cookieHome = join(dir, 'home')
  mkdirSync(cookieHome, { recursive: true })
  // One cookie for all nodes and for rabbitmqctl: they must share it to talk.
  writeFileSync(join(cookieHome, '.erlang.cookie'), `TSQCLUSTER${process.pid}X${Date.now()}`, { mode: 0o400 })
  const tag = `${process.pid}`
  const booted = await Promise.allSettled(Array.from({ length: size }, (_, i) => bootNode(dir, cookieHome, i + 1, tag, conf)))
  const nodes = booted.flatMap((b) => (b.status === 'fulfilled' ? [b.value] : []))
  const stopAll = async () => {
    await Promise.all(nodes.map((n) => n.stop()))
  }
  const failed = booted.find((b): b is PromiseRejectedResult => b.status === 'rejected')
  if (failed) {
    await stopAll()
    throw failed.reason
  }
  try {
    const [first, ...rest] = nodes
    for (const node of rest) {
      await node.ctl(['stop_app'])
      await node.ctl(['join_cluster', first!.name])
      await node.ctl(['start_app'])
    }
    const status = await first!.ctl(['cluster_status', '--formatter', 'json'])
    const running = (JSON.parse(status) as { running_nodes: string[] }).running_nodes
    if (running.length !== size) throw new Error(`cluster formed with ${running.length} of ${size} nodes: ${status}`)
  } catch (err) {
    await stopAll()
    throw err
  }
  return { nodes, urlList: nodes.map((n) => n.url).join(';'), stop: stopAll }
}
