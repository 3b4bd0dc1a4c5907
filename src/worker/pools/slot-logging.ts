// A slot's console goes to its own log file when the worker's --logfile has
// %i/%I (Celery formats the logfile in each process), else to the worker's.
import { createWriteStream } from 'node:fs'
import { format } from 'node:util'
import { nodeFormat } from '../../protocol/index.js'

export function setupSlotLogging(template: string | null, nodename: string, index: number): void {
  if (!template || !/%[iI]/.test(template)) return
  const stream = createWriteStream(nodeFormat(template, nodename, index), { flags: 'a' })
  const write = (level: string) => (...args: unknown[]) => {
    stream.write(`[${new Date().toISOString().replace('T', ' ').replace('Z', '')}: ${level}/ForkPoolWorker-${index}] ${format(...args)}\n`)
  }
  console.log = write('INFO')
  console.info = write('INFO')
  console.warn = write('WARNING')
  console.error = write('ERROR')
}
