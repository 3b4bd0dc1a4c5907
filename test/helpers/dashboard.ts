// Starts `tsq dashboard` as a shell would (bin/run.js, --port 0) and reads
// the URL from its start-up line; stops it by its own pid.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { BIN, ROOT } from './cli.js'

export interface SpawnedDashboard {
  child: ChildProcess
  url: string
  output: () => string
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

export async function startDashboard(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; readyTimeoutMs?: number } = {},
): Promise<SpawnedDashboard> {
  const child = spawn(process.execPath, [BIN, 'dashboard', '--port', '0', '--no-enable-events', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000)
  let url: string | undefined
  while (!(url = /visit me at (\S+)/.exec(output)?.[1])) {
    if (child.exitCode !== null) throw new Error(`dashboard exited early (${child.exitCode}):\n${output}`)
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`dashboard not ready in time:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    child,
    url: url.replace(/\/$/, ''),
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      const code = await exited
      clearTimeout(timer)
      return code
    },
  }
}

export const CHROMIUM = '/usr/bin/chromium'

/** In CI a missing browser fails the test file; elsewhere it is skipped saying why. */
export function chromiumSkipReason(): string | false {
  if (existsSync(CHROMIUM)) return false
  const reason = `${CHROMIUM} not installed (apt-get install -y chromium); skipping browser tests`
  if (process.env.CI) throw new Error(`CI requires the browser: ${reason}`)
  process.stderr.write(`SKIP: ${reason}\n`)
  return reason
}

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
