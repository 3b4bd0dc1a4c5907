import { Command, Flags, type Interfaces } from '@oclif/core'
import type { ChalkInstance } from 'chalk'
import { loadConfig, type ResolvedConfig } from '../app/config.js'
import { makeChalk } from './color.js'
import { exitCodeFor } from './exit-codes.js'

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof TsqCommand)['baseFlags'] & T['flags']>

/**
 * Owns what every tsq command shares: the global flags, configuration,
 * one-line errors with exit codes by error class, and single-line JSON.
 */
export abstract class TsqCommand<T> extends Command {
  static enableJsonFlag = true

  static baseFlags = {
    json: Flags.boolean({ char: 'j', description: 'Print one JSON document (for scripts).', helpGroup: 'GLOBAL' }),
    broker: Flags.string({ char: 'b', description: 'Broker URL (default: $TSQ_BROKER_URL, $CELERY_BROKER_URL, else the embedded file:// broker).', helpGroup: 'GLOBAL' }),
    'result-backend': Flags.string({ description: 'Result backend URL (default: $TSQ_RESULT_BACKEND, $CELERY_RESULT_BACKEND).', helpGroup: 'GLOBAL' }),
    'no-color': Flags.boolean({ description: 'Plain output (also NO_COLOR, or when not a terminal).', helpGroup: 'GLOBAL' }),
    quiet: Flags.boolean({ char: 'q', description: 'Print less.', helpGroup: 'GLOBAL' }),
    debug: Flags.boolean({ description: 'Show stack traces on errors.', helpGroup: 'GLOBAL' }),
  }

  static errorCodes = '0 success · 1 task or node failed · 64 usage · 69 broker unreachable or no node replied · 70 bug'

  protected color!: ChalkInstance
  private debugErrors = false

  /** oclif scans argv only for --json; -j means the same here. */
  override jsonEnabled(): boolean {
    if (super.jsonEnabled()) return true
    const dashdash = this.argv.indexOf('--')
    const argv = dashdash === -1 ? this.argv : this.argv.slice(0, dashdash)
    return argv.includes('-j')
  }

  override async init(): Promise<void> {
    await super.init()
    this.debugErrors = this.argv.includes('--debug')
    this.color = makeChalk(this.argv.includes('--no-color'))
  }

  protected config_(flags: { broker?: string; 'result-backend'?: string }): ResolvedConfig {
    return loadConfig({ broker: flags.broker, resultBackend: flags['result-backend'] })
  }

  protected override logJson(json: unknown): void {
    process.stdout.write(`${JSON.stringify(json)}\n`)
  }

  protected override async catch(err: Error & { code?: string; exitCode?: number }): Promise<void> {
    const exitCode = exitCodeFor(err)
    process.exitCode = exitCode
    const message = (err.message ?? String(err)).split('\n')[0]!.replace(/^Error: /, '')
    if (this.jsonEnabled()) {
      this.logJson({ error: { code: err.code ?? err.name ?? 'ERROR', message, exitCode } })
    }
    if (this.debugErrors && err.stack) process.stderr.write(`${err.stack}\n`)
    process.stderr.write(`Error: ${message}\n`)
  }
}
