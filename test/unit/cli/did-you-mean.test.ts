// "Did you mean": the names near a mistyped command, method or flag (a slip
// of one or two keys, two neighbours swapped, a name cut short), and the
// command line whose command tsq does not have, refused as a usage error
// (64) before oclif would exit 2, while every real command and topic passes.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { COMMANDS } from '../../../src/bundle/tsq.js'
import { exitCodeFor } from '../../../src/cli/exit-codes.js'
import { didYouMean, editDistance, nearestNames } from '../../../src/protocol/index.js'
import { unknownCommand } from '../../../src/cli/unknown-command.js'

const IDS = Object.keys(COMMANDS)

describe('nearest names', () => {
  it('counts a swap of neighbours as one edit', () => {
    assert.equal(editDistance('pnig', 'ping'), 1)
    assert.equal(editDistance('revok', 'revoke'), 1)
    assert.equal(editDistance('inspct', 'inspect'), 1)
    assert.equal(editDistance('', 'abc'), 3)
    assert.equal(editDistance('kitten', 'sitting'), 3)
  })

  it('offers what is near, nearest first, and nothing for a name near nothing', () => {
    assert.deepEqual(nearestNames('revok', ['revoke', 'revoked', 'rate_limit']), ['revoke', 'revoked'])
    assert.deepEqual(nearestNames('stat', ['stats', 'status', 'start']), ['start', 'stats', 'status'])
    assert.deepEqual(nearestNames('frobnicate', ['ping', 'stats']), [])
    assert.deepEqual(nearestNames('ping', ['ping']), [], 'the name itself is no suggestion')
    assert.equal(didYouMean('pnig', ['ping', 'stats']), ' (did you mean ping?)')
    assert.equal(
      didYouMean('revok', ['revoke', 'revoked'], (n) => `tsq inspect ${n}`),
      ' (did you mean tsq inspect revoke or tsq inspect revoked?)',
    )
    assert.equal(didYouMean('xyzzy', ['ping']), '')
  })
})

describe('a command tsq does not have', () => {
  it('every command and topic of the CLI passes, with its arguments and flags', () => {
    for (const id of IDS) assert.equal(unknownCommand([...id.split(':'), 'arg', '--flag'], IDS), undefined, id)
    assert.equal(unknownCommand(['list'], IDS), undefined, 'a topic alone is its help')
    assert.equal(unknownCommand(['list', '--help'], IDS), undefined)
    assert.equal(unknownCommand([], IDS), undefined)
    assert.equal(unknownCommand(['--version'], IDS), undefined)
  })

  it('is a usage error (exit 64) naming the near command, in a topic with its topic', () => {
    const top = unknownCommand(['inspct', 'ping'], IDS)
    assert.equal(top?.message, 'unknown command "inspct" (did you mean inspect?); tsq --help lists them')
    assert.equal(exitCodeFor(top), 64)
    assert.equal(
      unknownCommand(['schedule', 'lss'], IDS)?.message,
      'unknown command "schedule lss" (did you mean schedule ls?); tsq schedule --help lists them',
    )
    assert.equal(unknownCommand(['frobnicate'], IDS)?.message, 'unknown command "frobnicate"; tsq --help lists them')
  })
})
