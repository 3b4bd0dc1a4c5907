import { Command, type Interfaces } from '@oclif/core'
import type { ChalkInstance } from 'chalk'
import { applyGlobalOptions, clientConfig, type ClientConfig, type GlobalFlagValues } from './client-config.js'
import { makeChalk } from './color.js'
import { globalFlags } from './flags/oclif-flags.js'
import { remoteTarget, type RemoteTarget } from './remote-command.js'
import { commandLineErrorOf, reportCliError } from './report-error.js'
import { dumps } from '../protocol/index.js'

// oclif's FlagOutput and ArgOutput, which its public interfaces do not export.
type FlagOutput = { [name: string]: unknown }
type ArgOutput = { [name: string]: unknown }

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof TsqCommand)['baseFlags'] & T['flags']>

/**
 * Owns what every tsq command shares: the global flags (Celery's, which
 * bin/run.js also takes before the command name), configuration, one-line
 * errors with exit codes by error class, and single-line JSON.
 */
// _Result: what the command's run() returns, as each command states it (TsqCommand<void>).
export abstract class TsqCommand<_Result> extends Command {
  static enableJsonFlag = true

  static baseFlags = globalFlags

  static errorCodes = '0 success · 1 task or node failed · 64 usage · 69 broker unreachable or no node replied · 70 bug'

  protected color!: ChalkInstance
  private debugErrors = false

  /** oclif scans argv only for --json; -j means the same here. */
  override jsonEnabled(): boolean {
    if (super.jsonEnabled()) return true
    return this.flagWords().includes('-j')
  }

  /** The command line up to `--`, where flags can be. */
  private flagWords(): string[] {
    const dashdash = this.argv.indexOf('--')
    return dashdash === -1 ? this.argv : this.argv.slice(0, dashdash)
  }

  override async init(): Promise<void> {
    await super.init()
    const words = this.flagWords()
    this.debugErrors = words.includes('--debug')
    this.color = makeChalk(words.includes('--no-color') || words.includes('-C'))
  }

  /** oclif's parse, then --workdir and --config, before the command reads any path. */
  protected override async parse<F extends FlagOutput, B extends FlagOutput, A extends ArgOutput>(
    options?: Interfaces.Input<F, B, A>,
    argv?: string[],
  ): Promise<Interfaces.ParserOutput<F, B, A>> {
    const parsed = await super.parse(options, argv)
    applyGlobalOptions(parsed.flags as GlobalFlagValues)
    return parsed
  }

  /** The broker, result backend and app settings the global flags select (client-config.ts). */
  protected clientConfig(flags: GlobalFlagValues): Promise<ClientConfig> {
    return clientConfig(flags)
  }

  /** Where inspect, control and status broadcast, and how they print (remote-command.ts). */
  protected async remoteTarget(flags: GlobalFlagValues): Promise<RemoteTarget> {
    return remoteTarget(await this.clientConfig(flags), { json: this.jsonEnabled(), color: this.color, print: (line) => this.log(line) })
  }

  protected override logJson(json: unknown): void {
    let text: string
    try {
      text = JSON.stringify(json)
    } catch (error) {
      // An int past 2**53 (a stored result's, a reply's) is a BigInt: kombu's JSON writes its digits.
      if (!(error instanceof TypeError && /BigInt/.test(error.message))) throw error
      text = dumps(json)
    }
    process.stdout.write(`${text}\n`)
  }

  protected override async catch(err: Error & { code?: string; exitCode?: number }): Promise<void> {
    reportCliError(commandLineErrorOf(err), { json: this.jsonEnabled(), debug: this.debugErrors, command: this.id?.replace(/:/g, ' ') })
  }
}
