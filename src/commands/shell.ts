import { Flags } from '@oclif/core'
import { text } from 'node:stream/consumers'
import { TsqCommand } from '../cli/base-command.js'
import { defaultAppModulePath, loadApp, resolveAppModule } from '../app/index.js'
import { runShellScript, shellContext, startShellRepl } from '../cli/shell.js'

export default class Shell extends TsqCommand<void> {
  static summary = 'A Node REPL with the app, its tasks and the canvas (chain, group, chord, chunks, signature).'
  static description =
    'Each task is there under its short name and all under tasks["full.name"]; top-level await works (`await add.delay(2, 2).get()`). History is kept in ~/.tsq_shell_history (TSQ_SHELL_HISTORY). When stdin is not a terminal, what is piped in runs as one script and the shell exits, non-zero on an uncaught error.'
  static enableJsonFlag = false
  static flags = {
    'without-tasks': Flags.boolean({ char: 'T', description: "Don't add the tasks to the shell's names." }),
  }
  static examples = [
    '<%= config.bin %> shell -A ./tasks.js',
    'echo "console.log(await add.delay(2, 2).get({ timeout: 10 }))" | <%= config.bin %> shell -A ./tasks.js',
  ]

  async run(): Promise<void> {
    const { flags } = await this.parse(Shell)
    const app = await loadApp(flags.app ? resolveAppModule(flags.app) : defaultAppModulePath())
    app.configure({ broker: flags.broker, resultBackend: flags['result-backend'] })
    const context = shellContext(app, { withoutTasks: flags['without-tasks'] })
    try {
      if (process.stdin.isTTY) await startShellRepl(context, `tsq shell: ${Object.keys(context).sort().join(', ')}`)
      else await runShellScript(await text(process.stdin), context)
    } finally {
      await app.close()
    }
  }
}
