// The fast path's parser must accept only what oclif would parse the same way,
// and hand everything else to oclif (undefined).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Parser } from '@oclif/core'
import Control from '../../../src/commands/control.js'
import Inspect from '../../../src/commands/inspect.js'
import Migrate from '../../../src/commands/migrate.js'
import Status from '../../../src/commands/status.js'
import { TsqCommand } from '../../../src/cli/base-command.js'
import { hoistGlobalOptions, planFastRun } from '../../../src/cli/fast-path.js'
import { CONTROL_FLAG_SPECS, GLOBAL_FLAG_SPECS, MIGRATE_FLAG_SPECS, REMOTE_FLAG_SPECS, type FlagSpec } from '../../../src/cli/flag-specs.js'

describe('fast path: planFastRun', () => {
  it('parses short, long and --flag=value forms, with the specs\' defaults', () => {
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

  it('takes Celery\'s global options, also when bin/run.js moved them from before the command', () => {
    const plan = planFastRun(hoistGlobalOptions(['-A', './tasks.js', '-b', 'amqp://h//', '--workdir', '/srv', '-C', '-q', 'inspect', 'ping', '-t', '2']))
    assert.ok(plan)
    assert.equal(plan.command, 'inspect')
    assert.deepEqual(plan.positionals, ['ping'])
    assert.deepEqual([plan.flags.app, plan.flags.broker, plan.flags.workdir, plan.flags['no-color'], plan.flags.quiet, plan.flags.timeout], ['./tasks.js', 'amqp://h//', '/srv', true, true, '2'])
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

describe('fast path: one flag definition', () => {
  const cases: Array<[string, Record<string, { char?: string; default?: unknown; choices?: readonly string[] }>, Record<string, FlagSpec>]> = [
    ['inspect', { ...TsqCommand.baseFlags, ...Inspect.flags }, { ...GLOBAL_FLAG_SPECS, ...REMOTE_FLAG_SPECS }],
    ['control', { ...TsqCommand.baseFlags, ...Control.flags }, { ...GLOBAL_FLAG_SPECS, ...CONTROL_FLAG_SPECS }],
    ['status', { ...TsqCommand.baseFlags, ...Status.flags }, { ...GLOBAL_FLAG_SPECS, ...REMOTE_FLAG_SPECS }],
    ['migrate', { ...TsqCommand.baseFlags, ...Migrate.flags }, { ...GLOBAL_FLAG_SPECS, ...MIGRATE_FLAG_SPECS }],
  ]
  for (const [name, oclif, specs] of cases) {
    it(`${name}: oclif's flags are the specs' flags`, () => {
      assert.deepEqual(Object.keys(oclif).sort(), Object.keys(specs).sort())
      for (const [flag, spec] of Object.entries(specs)) {
        assert.equal(oclif[flag]!.char, spec.char, `${name} --${flag} char`)
        const oclifDefault = oclif[flag]!.default
        assert.equal(oclifDefault === undefined ? undefined : String(oclifDefault), spec.default, `${name} --${flag} default`)
        // oclif-flags.ts turns a spec's options into click-worded choices.
        assert.deepEqual(oclif[flag]!.choices, spec.options, `${name} --${flag} options`)
      }
    })
  }
})

describe('fast path: migrate', () => {
  /** What oclif's own parser makes of a migrate line, in the fast plan's shape. */
  async function oclifReading(argv: string[]): Promise<{ positionals: string[]; flags: Record<string, unknown> }> {
    const { args, flags } = await Parser.parse(argv, { flags: { ...TsqCommand.baseFlags, ...Migrate.flags }, args: Migrate.args, strict: true })
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
