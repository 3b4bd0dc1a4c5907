// The fast path's parser must accept only what oclif would parse the same way,
// and hand everything else to oclif (undefined); its specs are read from the
// command classes, as the build reads them (scripts/bundle.mjs), and agree with
// oclif's own manifest of the same classes.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { Flags, Parser } from '@oclif/core'
import Control from '../../../src/commands/control.js'
import Inspect from '../../../src/commands/inspect.js'
import Migrate from '../../../src/commands/migrate.js'
import Status from '../../../src/commands/status.js'
import { TsqCommand } from '../../../src/cli/base-command.js'
import { hoistGlobalOptions, planFastRun as planWith } from '../../../src/cli/fast-path.js'
import { FAST_COMMANDS, fastCommandSpec, fastSpecsOf, type CommandShape } from '../../../src/cli/fast-specs.js'
import { integerFlag, stringFlag } from '../../../src/cli/flags/oclif-flags.js'

const CLASSES = { inspect: Inspect, control: Control, status: Status, migrate: Migrate } as unknown as Record<string, CommandShape>
const { specs: SPECS, unreadable } = fastSpecsOf(CLASSES)
const planFastRun = (argv: readonly string[]) => planWith(argv, SPECS)

describe('fast path: planFastRun', () => {
  it("parses short, long and --flag=value forms, with the specs' defaults", () => {
    const plan = planFastRun(['inspect', 'ping', '-d', 'a@h', '--timeout=2', '-j', '--limit', '3'])
    assert.ok(plan)
    assert.equal(plan.command, 'inspect')
    assert.deepEqual(plan.positionals, ['ping'])
    assert.equal(plan.flags.destination, 'a@h')
    assert.equal(plan.flags.timeout, '2')
    assert.equal(plan.flags.json, true)
    assert.equal(plan.flags.limit, 3)
    assert.equal(planFastRun(['status'])?.flags.timeout, '1.0')
  })

  it('keeps argument words of the method in order, flags among them', () => {
    const plan = planFastRun(['inspect', 'query_task', 'id1', '-t', '2', 'id2'])
    assert.deepEqual(plan?.positionals, ['query_task', 'id1', 'id2'])
  })

  it("takes Celery's global options, also when bin/run.js moved them from before the command", () => {
    const plan = planFastRun(
      hoistGlobalOptions(['-A', './tasks.js', '-b', 'amqp://h//', '--workdir', '/srv', '-C', '-q', 'inspect', 'ping', '-t', '2']),
    )
    assert.ok(plan)
    assert.equal(plan.command, 'inspect')
    assert.deepEqual(plan.positionals, ['ping'])
    assert.deepEqual(
      [plan.flags.app, plan.flags.broker, plan.flags.workdir, plan.flags['no-color'], plan.flags.quiet, plan.flags.timeout],
      ['./tasks.js', 'amqp://h//', '/srv', true, true, '2'],
    )
    assert.equal(planFastRun(hoistGlobalOptions(['--config', 'celeryconfig.json', 'status']))?.flags.config, 'celeryconfig.json')
  })

  it('accepts control revoke --terminate --signal', () => {
    const plan = planFastRun(['control', 'revoke', 'abc', '--terminate', '--signal', 'KILL'])
    assert.equal(plan?.flags.terminate, true)
    assert.equal(plan?.flags.signal, 'KILL')
  })

  const handedToOclif: string[][] = [
    ['worker'],
    ['inspect'],
    ['status', 'extra'],
    ['inspect', 'ping', '--help'],
    ['inspect', 'ping', '-h'],
    ['inspect', 'ping', '--', 'x'],
    ['inspect', 'ping', '-d=a@h'],
    ['inspect', 'ping', '--nosuchflag'],
    ['inspect', 'ping', '--json=yes'],
    ['inspect', 'ping', '-t', '1', '-t', '2'],
    ['inspect', 'ping', '--matcher', 'regex', '--pattern', 'x'],
    ['inspect', 'ping', '--limit', '0'],
    ['inspect', 'ping', '--limit', 'many'],
    ['inspect', 'ping', '--terminate'],
    ['control', 'revoke', 'abc', '--signal', 'KILL'],
    ['inspect', 'ping', '-d'],
  ]
  for (const argv of handedToOclif) {
    it(`hands "${argv.join(' ')}" to oclif`, () => {
      assert.equal(planFastRun(argv), undefined)
    })
  }
})

describe('fast path: specs from the command classes', () => {
  it('reads every flag of all four commands (none left to oclif)', () => {
    assert.deepEqual(unreadable, [])
    assert.deepEqual(Object.keys(SPECS).sort(), [...FAST_COMMANDS].sort())
  })

  const manifest = JSON.parse(readFileSync(new URL('../../../oclif.manifest.json', import.meta.url), 'utf8')) as {
    commands: Record<
      string,
      {
        flags: Record<string, { char?: string; type: string; default?: unknown; dependsOn?: string[] }>
        args: Record<string, { required?: boolean }>
        strict?: boolean
      }
    >
  }
  for (const id of FAST_COMMANDS) {
    it(`${id}: the same flags, letters, defaults and arguments as oclif's manifest`, () => {
      const ours = SPECS[id]!
      const theirs = manifest.commands[id]!
      assert.deepEqual(
        Object.keys(ours.flags).sort(),
        Object.keys(theirs.flags).sort(),
        'run `npm run build` if a flag was added: it writes the manifest',
      )
      for (const [name, flag] of Object.entries(theirs.flags)) {
        const mine = ours.flags[name]!
        assert.equal(mine.char, flag.char, `--${name} char`)
        assert.equal(mine.kind === 'boolean', flag.type === 'boolean', `--${name} type`)
        assert.equal(
          mine.default === undefined ? undefined : String(mine.default),
          flag.default === undefined ? undefined : String(flag.default),
          `--${name} default`,
        )
        assert.deepEqual(mine.dependsOn, flag.dependsOn, `--${name} dependsOn`)
      }
      const required = Object.values(theirs.args).filter((a) => a.required).length
      assert.deepEqual(ours.positionals, [required, theirs.strict === false ? null : Object.keys(theirs.args).length])
    })
  }

  it('a flag added to a command class is read with no other change', () => {
    const spec = fastCommandSpec({
      ...(Inspect as unknown as CommandShape),
      flags: { ...Inspect.flags, extra: stringFlag({ char: 'x' }), count: integerFlag({ min: 2 }) } as unknown as CommandShape['flags'],
    })
    assert.ok(typeof spec !== 'string', String(spec))
    const plan = planWith(['inspect', 'ping', '-x', 'v', '--count', '3'], { inspect: spec })
    assert.deepEqual([plan?.flags.extra, plan?.flags.count], ['v', 3])
    assert.equal(planWith(['inspect', 'ping', '--count', '1'], { inspect: spec }), undefined)
  })

  it("every global flag of the command classes may come before the command name (global-options.ts's list)", () => {
    for (const [name, flag] of Object.entries(TsqCommand.baseFlags as Record<string, { type: string; char?: string }>)) {
      const forms = [`--${name}`, ...(flag.char ? [`-${flag.char}`] : [])]
      for (const form of forms) {
        const words = flag.type === 'boolean' ? [form] : [form, 'v']
        assert.deepEqual(hoistGlobalOptions([...words, 'status']), ['status', ...words], form)
      }
    }
  })

  const unreadableFlags: Array<[string, unknown]> = [
    ["oclif's own Flags.string (no fastValue: its parse may be anything)", Flags.string()],
    ['a boolean that takes --no-x', Flags.boolean({ allowNo: true })],
    ['a flag of several values', stringFlag({ multiple: true })],
    ['a flag read from the environment too', stringFlag({ env: 'X' })],
    ['a flag exclusive of another', stringFlag({ exclusive: ['destination'] })],
  ]
  for (const [what, flag] of unreadableFlags) {
    it(`leaves a command with ${what} to oclif, saying which flag`, () => {
      const spec = fastCommandSpec({
        ...(Status as unknown as CommandShape),
        flags: { ...Status.flags, odd: flag } as unknown as CommandShape['flags'],
      })
      assert.equal(typeof spec, 'string')
      assert.match(spec as string, /--odd/)
    })
  }
})

describe('fast path: migrate', () => {
  /** What oclif's own parser makes of a migrate line, in the fast plan's shape. */
  async function oclifReading(argv: string[]): Promise<{ positionals: string[]; flags: Record<string, unknown> }> {
    const { args, flags } = await Parser.parse(argv, {
      flags: { ...TsqCommand.baseFlags, ...Migrate.flags },
      args: Migrate.args,
      strict: true,
    })
    return { positionals: [args.source as string, args.destination as string], flags }
  }

  /** The plan's flags without the ones left unset, as oclif leaves them out. */
  const setFlags = (flags: Record<string, unknown>) => Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined))

  const goodLines: string[][] = [
    ['migrate', 'amqp://h//', 'redis://h/0'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-a', '-Q', 'celery,img:pics'],
    ['migrate', '-n', '5', 'amqp://h//', '--timeout', '0.5', 'redis://h/0', '-T', 'proj.add', '-F'],
    ['migrate', 'redis://h/1', 'amqp://h//', '--limit=0', '-t', '0', '--ack-messages', '-j', '-q'],
    ['migrate', 'redis://h/1', 'amqp://h//', '-t', '2', '-b', 'amqp://x//', '--workdir', '/srv', '-C', '--debug'],
  ]
  for (const argv of goodLines) {
    it(`reads "${argv.join(' ')}" as oclif does`, async () => {
      const plan = planFastRun(argv)
      assert.ok(plan)
      assert.equal(plan.command, 'migrate')
      const oclif = await oclifReading(argv.slice(1))
      assert.deepEqual(plan.positionals, oclif.positionals)
      assert.deepEqual(setFlags(plan.flags), setFlags(oclif.flags))
    })
  }

  it('defaults -t to 1 second, as a number', () => {
    assert.equal(planFastRun(['migrate', 'a://', 'b://'])?.flags.timeout, 1)
  })

  const handedToOclif: string[][] = [
    ['migrate'],
    ['migrate', 'amqp://h//'],
    ['migrate', 'amqp://h//', 'redis://h/0', 'extra'],
    ['migrate', 'amqp://h//', 'redis://h/0', '--help'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-t', 'soon'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-t', '-1'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-t', '1e3'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-t', ' 1'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-n', '-1'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-n', '1.5'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-a', '-a'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-Q=celery'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-Q'],
    ['migrate', 'amqp://h//', 'redis://h/0', '--', '-a'],
    ['migrate', 'amqp://h//', 'redis://h/0', '-d', 'w1@h'],
  ]
  for (const argv of handedToOclif) {
    it(`hands "${argv.join(' ')}" to oclif`, () => {
      assert.equal(planFastRun(argv), undefined)
    })
  }
})
