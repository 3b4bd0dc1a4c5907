import { TsqCommand } from '../cli/base-command.js'
import { loadApp, resolveAppModule } from '../app/index.js'
import { buildReport, formatReport, type Report as ReportData } from '../cli/report.js'

export default class Report extends TsqCommand<ReportData> {
  static summary = 'Print what to paste in a bug report: versions, the app, its broker and backend, its settings (secrets masked).'
  static examples = ['<%= config.bin %> report -A ./tasks.js', '<%= config.bin %> report -A ./tasks.js --json']

  async run(): Promise<ReportData> {
    const { flags } = await this.parse(Report)
    const modulePath = flags.app ? resolveAppModule(flags.app) : null
    const app = modulePath ? await loadApp(modulePath) : null
    const config = await this.clientConfig(flags)
    const report = buildReport({
      version: this.config.version,
      app,
      modulePath,
      broker: config.brokerUrl,
      resultBackend: config.resultBackend ?? null,
    })
    if (!this.jsonEnabled()) this.log(formatReport(report))
    return report
  }
}
