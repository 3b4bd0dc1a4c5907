// A plain redis-server of a test's own, on a port the test chose, with no
// persistence: for tests that stop and restart the broker under tsq, which
// they must never do to the shared server on 6379.
import { spawn } from 'node:child_process'
import { GroupProcess, sleep } from './process-group.js'

/** Whether redis-server can be started here (checked once per test file). */
export const hasRedisServer = await new Promise<boolean>((resolve) => {
  const probe = spawn('redis-server', ['--version'], { stdio: 'ignore' })
  probe.once('error', () => resolve(false))
  probe.once('exit', (code) => resolve(code === 0))
})

/** Starts redis-server on 127.0.0.1:port with its files in dir (and extraArgs, e.g. --requirepass); resolves once it accepts connections. */
export async function startRedisServer(port: number, dir: string, extraArgs: readonly string[] = []): Promise<GroupProcess> {
  const proc = new GroupProcess(
    spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  )
  const deadline = Date.now() + 30_000
  while (!proc.log.includes('Ready to accept connections')) {
    if (proc.hasExited || Date.now() > deadline) {
      await proc.stopWith(() => undefined, 0)
      throw new Error(`redis-server did not start:\n${proc.logTail()}`)
    }
    await sleep(50)
  }
  return proc
}
