// The exit status of an error that ends a command: by its code, through the one
// table beside the error root (protocol/errors.ts), never by message text or
// class name; oclif's parse errors by their shape and exit.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ExitCode, exitCodeFor, isOclifUsageError } from '../../../src/cli/exit-codes.js'
import { CliError, NoRepliesError, UsageError } from '../../../src/cli/errors.js'
import {
  BadBrokerUrlError,
  BrokerConnectionError,
  BrokerRequestError,
  PublishTimeoutError,
  TsqTransportError,
} from '../../../src/transport/errors.js'
import { PrivilegeError } from '../../../src/process/privileges.js'
import { isTsqError, MalformedMessageError, NodeTemplateError, ProtocolError, TsqError } from '../../../src/protocol/index.js'
import { MultiError, MultiUsageError } from '../../../src/multi/errors.js'
import { BusError, TopologyMismatchError } from '../../../src/bus/errors.js'
import { QueueSettingError } from '../../../src/config/index.js'
import { RetryRequest } from '../../../src/app/index.js'
import { WorkerSettingError } from '../../../src/worker/worker-settings.js'
import { LogFileError } from '../../../src/logtool/index.js'

describe('exitCodeFor maps by code, never by message or class name', () => {
  const table: Array<[string, unknown, number]> = [
    ['no replies', new NoRepliesError(), ExitCode.UNAVAILABLE],
    ['broker unreachable', new BrokerConnectionError('refused'), ExitCode.UNAVAILABLE],
    ['bad url', new BadBrokerUrlError('x'), ExitCode.USAGE],
    ['usage', new UsageError('x'), ExitCode.USAGE],
    ['--uid without the right to change it', new PrivilegeError('x', 'PERMISSION'), ExitCode.FAILURE],
    ['--uid naming no user', new PrivilegeError('x', 'BAD_ARGUMENT'), ExitCode.USAGE],
    ['oclif flag syntax', Object.assign(new Error('Nonexistent flag'), { oclif: { exit: 2 } }), ExitCode.USAGE],
    ['oclif explicit exit', Object.assign(new Error('x'), { oclif: { exit: 73 } }), 73],
    ['broker refused the request (404, 406)', new BrokerRequestError('NOT_FOUND', "no queue 'x'"), ExitCode.FAILURE],
    ['a send past its timeout that may still be delivered', new PublishTimeoutError('x', true), ExitCode.UNAVAILABLE],
    ['a send past its timeout that was not sent (safe to retry)', new PublishTimeoutError('x', false), ExitCode.TEMPFAIL],
    ['unknown bug', new TypeError('undefined is not a function'), ExitCode.SOFTWARE],
    ['message text is ignored', new Error('No nodes replied within time constraint'), ExitCode.SOFTWARE],
    ['the root with a code of the table', new TsqError('CONFIG', 'x'), ExitCode.USAGE],
    ['the root with a code of none', new TsqError('NO_SUCH_CODE', 'x'), ExitCode.SOFTWARE],
    ['an error no command should end with (a task asking the worker to retry)', new RetryRequest({}), ExitCode.SOFTWARE],
    ['a node-name template with an unknown key (-n w%q@h)', new NodeTemplateError('unknown format %q'), ExitCode.USAGE],
    [
      'a plain error with one of the codes (a layer that throws its own)',
      Object.assign(new Error('x'), { code: 'CANT_CREATE' }),
      ExitCode.CANTCREAT,
    ],
    ['a code that is only an Object.prototype name', Object.assign(new Error('x'), { code: 'toString' }), ExitCode.SOFTWARE],
    ['a broker refusal whose code the table names', new BrokerRequestError('USAGE', 'x'), ExitCode.USAGE],
    [
      "a refusal whose code the table gives tsq's bug status (a name too long for the file broker)",
      new BrokerRequestError('NAME_TOO_LONG', 'x'),
      ExitCode.FAILURE,
    ],
    ['a worker setting tsq cannot run with', new WorkerSettingError('x'), ExitCode.USAGE],
    ['a log file logtool cannot read', new LogFileError('x'), ExitCode.USAGE],
    ["the dashboard's --db or --basic-auth-file that is not one", new UsageError('x'), ExitCode.USAGE],
    ['a malformed message', new MalformedMessageError('x'), ExitCode.USAGE],
    ['a multi usage error', new MultiUsageError('x'), ExitCode.USAGE],
    ['a bus configuration error', new TopologyMismatchError('q', null, {}, 'x'), ExitCode.USAGE],
    ['a setting error of config/', new QueueSettingError('x'), ExitCode.USAGE],
    [
      "oclif's parse error (its CLIParseError shape)",
      Object.assign(new Error('Missing 1 required arg'), { parse: { input: {}, output: {} }, oclif: { exit: 2 } }),
      ExitCode.USAGE,
    ],
  ]
  for (const [name, error, code] of table) {
    it(`${name} → ${code}`, () => assert.equal(exitCodeFor(error), code))
  }
})

describe('one error root', () => {
  it('the base of each layer is a TsqError, with the class name as its name', () => {
    for (const base of [ProtocolError, TsqTransportError, CliError, MultiError, BusError]) {
      const error = new base('CODE', 'x')
      assert.ok(error instanceof TsqError, base.name)
      assert.equal(error.name, base.name)
      assert.equal(error.code, 'CODE')
    }
  })

  it("is told by a registry symbol, so another copy of tsq's classes (a task module's) counts too", () => {
    const foreign = Object.create({ [Symbol.for('tsq.error')]: true, exitCode: 73 }) as Error
    assert.equal(isTsqError(foreign), true)
    assert.equal(exitCodeFor(foreign), 73)
    assert.equal(isTsqError(Object.assign(new Error('x'), { code: 'USAGE' })), false)
  })

  it("oclif's own parse errors have that shape: an unknown flag, a missing or extra argument (exit 64, with the --help hint)", async () => {
    const { Args, Flags, Parser } = await import('@oclif/core')
    for (const argv of [['x', '--nope'], [], ['a', 'b']]) {
      const error = await Parser.parse(argv, {
        flags: { n: Flags.integer() },
        args: { id: Args.string({ required: true }) },
        strict: true,
      }).then(
        () => undefined,
        (e: unknown) => e,
      )
      assert.ok(error, `oclif parsed ${argv.join(' ')}`)
      assert.equal(isOclifUsageError(error), true, String(error))
      assert.equal(exitCodeFor(error), ExitCode.USAGE)
    }
  })

  it("oclif's usage errors are told by shape, not by class name", () => {
    assert.equal(isOclifUsageError(Object.assign(new Error('x'), { parse: {}, oclif: { exit: 2 } })), true)
    assert.equal(isOclifUsageError(Object.assign(new Error('x'), { oclif: { exit: 2 } })), false)
    assert.equal(isOclifUsageError(new UsageError('x')), false)
  })
})
