// The Kubernetes manifests of docs/kubernetes.md: each document passes its
// schema (apps/v1 Deployment and v1 Service from the Kubernetes OpenAPI
// spec, keda.sh/v1alpha1 ScaledObject from KEDA's CRD, as the
// kubernetes-models packages carry them), and they keep tsq's own rules: the
// probes reach the port given to --health-port, a worker's grace period covers
// its soft shutdown and preStop starts it, the flags exist, and each
// ScaledObject scales a Deployment of the page on tsq's load figure.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { blocks } from '../helpers/markdown.js'
import WorkerCommand from '../../src/commands/worker.js'
import BeatCommand from '../../src/commands/beat.js'
import DashboardCommand from '../../src/commands/dashboard.js'

type Doc = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any -- manifests are free-form YAML

const docs: Doc[] = blocks('docs/kubernetes.md')
  .filter((b) => b.lang === 'yaml')
  .flatMap((b) => parseAllDocuments(b.body).map((d) => d.toJSON() as Doc))
const byKind = (kind: string) => docs.filter((d) => d.kind === kind)

/**
 * The schema packages (devDependencies), or TSQ_K8S_MODELS_DIR: a folder
 * whose node_modules holds them. Missing: a skip outside CI, a failure in CI.
 */
async function loadModels(): Promise<{ validators: Record<string, (doc: Doc) => void> } | string> {
  const dir = process.env.TSQ_K8S_MODELS_DIR
  const load = (spec: string, file: string): Promise<Record<string, new (doc: Doc) => { validate(): void }>> =>
    import(dir ? pathToFileURL(join(dir, 'node_modules', file)).href : spec)
  try {
    const apps = await load('kubernetes-models/apps/v1', 'kubernetes-models/apps/v1/index.js')
    const core = await load('kubernetes-models/v1', 'kubernetes-models/v1/index.js')
    const keda = await load('@kubernetes-models/keda/keda.sh/v1alpha1', '@kubernetes-models/keda/keda.sh/v1alpha1/index.js')
    const check = (Model: new (doc: Doc) => { validate(): void }) => (doc: Doc) => new Model(doc).validate()
    return { validators: { Deployment: check(apps.Deployment!), Service: check(core.Service!), ScaledObject: check(keda.ScaledObject!) } }
  } catch (error) {
    const reason = `the schema packages kubernetes-models and @kubernetes-models/keda are not installed (${(error as Error).message.split('\n')[0]})`
    if (process.env.CI) throw new Error(reason, { cause: error })
    return reason
  }
}
const models = await loadModels()

/** The value after `--flag` in a command line. */
const flagValue = (command: string[], flag: string): string | undefined => {
  const i = command.indexOf(flag)
  return i >= 0 ? command[i + 1] : undefined
}

const containers = (d: Doc): Doc[] => d.spec.template.spec.containers

describe('docs/kubernetes.md', () => {
  it('has a worker, a beat and a dashboard Deployment, a Service and two ScaledObjects', () => {
    assert.deepEqual(
      byKind('Deployment').map((d) => d.metadata.name),
      ['tsq-worker', 'tsq-beat', 'tsq-dashboard'],
    )
    assert.equal(byKind('Service').length, 1)
    assert.equal(byKind('ScaledObject').length, 2)
  })

  it('passes the Kubernetes and KEDA schemas', { skip: typeof models === 'string' ? models : false }, () => {
    if (typeof models === 'string') return
    for (const doc of docs) {
      const validate = models.validators[doc.kind]
      assert.ok(validate, `no schema for ${doc.kind}`)
      assert.doesNotThrow(() => validate(doc), `${doc.kind} ${doc.metadata?.name}`)
    }
  })

  it('the schemas refuse a broken manifest (the check bites)', { skip: typeof models === 'string' ? models : false }, () => {
    if (typeof models === 'string') return
    const worker = structuredClone(byKind('Deployment')[0]!)
    worker.spec.template.spec.terminationGracePeriodSeconds = 'soon'
    assert.throws(() => models.validators.Deployment!(worker), /terminationGracePeriodSeconds/)
    const scaled = structuredClone(byKind('ScaledObject')[0]!)
    scaled.spec.triggers[0].metadata.threshold = 1
    assert.throws(() => models.validators.ScaledObject!(scaled), /threshold/)
  })

  it('runs tsq commands with flags that exist, and probes the health port they serve', () => {
    const commands: Record<string, { flags: Record<string, { char?: string }> }> = {
      worker: WorkerCommand,
      beat: BeatCommand,
      dashboard: DashboardCommand,
    }
    for (const deployment of byKind('Deployment')) {
      for (const container of containers(deployment)) {
        const command: string[] = container.command
        assert.equal(command[0], 'tsq')
        const flags = commands[command[1]!]!.flags
        for (const word of command.slice(2)) {
          if (word.startsWith('--')) assert.ok(word.slice(2) in flags, `${command[1]} has no ${word}`)
          else if (/^-[a-zA-Z]$/.test(word))
            assert.ok(
              Object.values(flags).some((f) => f.char === word[1]),
              `${command[1]} has no ${word}`,
            )
        }
        const port = Number(flagValue(command, '--health-port'))
        assert.ok(port > 0, `${deployment.metadata.name} serves a health port`)
        const named = new Map((container.ports as Doc[]).map((p) => [p.name, p.containerPort]))
        for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
          const get = container[probe]?.httpGet
          if (!get) continue
          assert.equal(typeof get.port === 'string' ? named.get(get.port) : get.port, port, `${deployment.metadata.name} ${probe}`)
          assert.equal(get.path, probe === 'readinessProbe' ? '/readyz' : '/healthz')
        }
        assert.ok(container.livenessProbe && container.readinessProbe, `${deployment.metadata.name} has both probes`)
      }
    }
  })

  it('gives the worker a grace period that covers its soft shutdown, started by preStop', () => {
    const worker = byKind('Deployment').find((d) => d.metadata.name === 'tsq-worker')!
    const container = containers(worker)[0]!
    const soft = Number(flagValue(container.command, '--soft-shutdown-timeout'))
    assert.ok(soft > 0)
    assert.ok(worker.spec.template.spec.terminationGracePeriodSeconds >= soft + 10)
    assert.match(container.lifecycle.preStop.exec.command.join(' '), /kill -QUIT 1/)
  })

  it('scales a Deployment of the page on the load figure', () => {
    const names = new Set(byKind('Deployment').map((d) => d.metadata.name))
    for (const scaled of byKind('ScaledObject')) {
      assert.ok(names.has(scaled.spec.scaleTargetRef.name))
      for (const trigger of scaled.spec.triggers) {
        assert.equal(trigger.metricType, 'Value')
        const where = trigger.type === 'prometheus' ? trigger.metadata.query : trigger.metadata.valueLocation
        assert.match(where, /tsq_queue_load\{queue="celery"\}|^queues\.celery\.load$/)
      }
    }
  })
})
