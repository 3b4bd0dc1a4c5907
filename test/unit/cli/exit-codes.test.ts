import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ExitCode, exitCodeFor } from '../../../src/cli/exit-codes.js'
import { NoRepliesError, UsageError } from '../../../src/cli/errors.js'
import { BadBrokerUrlError, BrokerConnectionError, BrokerRequestError, PublishTimeoutError } from '../../../src/transport/errors.js'
import { PrivilegeError } from '../../../src/process/privileges.js'

describe('exitCodeFor maps by error class and code, never by message', () => {
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
  ]
  for (const [name, error, code] of table) {
    it(`${name} → ${code}`, () => assert.equal(exitCodeFor(error), code))
  }
})
