// Real broker drops for the reconnect cases, limited to this process's own
// connections (named `tsq-<pid>-...`) so tests running beside us are untouched.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'

const run = promisify(execFile)

export function ownConnectionPrefix(): string {
  return `tsq-${process.pid}-`
}

export async function killAmqpConnections(prefix = ownConnectionPrefix()): Promise<void> {
  const { stdout } = await run('rabbitmqctl', ['-q', '--no-table-headers', 'list_connections', 'pid', 'client_properties'])
  const pids: string[] = []
  for (const line of stdout.split('\n')) {
    const [pid, props] = line.split('\t')
    const name = /\{"connection_name","([^"]*)"\}/.exec(props ?? '')?.[1]
    if (pid && name?.startsWith(prefix)) pids.push(pid)
  }
  for (const pid of pids) {
    await run('rabbitmqctl', ['-q', 'close_connection', pid, 'tsq conformance: simulated broker drop']).catch(() => undefined)
  }
}

export async function killRedisConnections(url: string, prefix = ownConnectionPrefix()): Promise<void> {
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await admin.connect()
    const list = (await admin.client('LIST')) as string
    for (const line of list.split('\n')) {
      const id = /(?:^|\s)id=(\d+)/.exec(line)?.[1]
      const name = /(?:^|\s)name=(\S*)/.exec(line)?.[1]
      if (id && name?.startsWith(prefix)) await admin.client('KILL', 'ID', id).catch(() => undefined)
    }
  } finally {
    admin.disconnect()
  }
}
