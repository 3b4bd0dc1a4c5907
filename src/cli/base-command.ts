import { Command, type Interfaces } from '@oclif/core'
import type { ChalkInstance } from 'chalk'
import { loadConfig, type ResolvedConfig } from '../app/config.js'
import { makeChalk } from './color.js'
import { globalFlags } from './oclif-flags.js'
import { reportCliError } from './report-error.js'

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof TsqCommand)['baseFlags'] & T['flags']>

/**
 * Owns what every tsq command shares: the global flags, configuration,
 * one-line errors with exit codes by error class, and single-line JSON.
 */
export abstract class TsqCommand<T> extends Command {
  static enableJsonFlag = true

  static baseFlags = globalFlags

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
    reportCliError(err, { json: this.jsonEnabled(), debug: this.debugErrors })
  }
}
