// What the figures were measured on, printed with every run.
import { execFileSync } from 'node:child_process'
import { cpus, platform, release } from 'node:os'

function tryRun(cmd: string, args: readonly string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return 'unknown'
  }
}

export function benchEnv(python: string): Record<string, string | number> {
  const cpu = cpus()
  return {
    node: process.version,
    platform: `${platform()} ${release()}`,
    cpu: cpu[0]?.model ?? 'unknown',
    cpus: cpu.length,
    celery: tryRun(python, ['-m', 'celery', '--version']),
  }
}

export function formatEnv(env: Record<string, string | number>): string {
  return Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join('  ')
}
