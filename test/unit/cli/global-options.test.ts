// Celery's global options before the command name (`tsq -A x worker`) are moved
// behind it by bin/run.js (src/cli/flags/global-options.ts), where every command
// takes them; anything else is left for oclif to answer.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { hoistGlobalOptions, TOPICS } from '../../../src/cli/flags/global-options.js'
import { COMMANDS } from '../../../src/bundle/tsq.js'

describe('hoistGlobalOptions', () => {
  const moved: Array<[string[], string[]]> = [
    [
      ['-A', './tasks.js', 'worker', '-l', 'INFO'],
      ['worker', '-A', './tasks.js', '-l', 'INFO'],
    ],
    [
      ['-b', 'amqp://h//', 'inspect', 'ping'],
      ['inspect', '-b', 'amqp://h//', 'ping'],
    ],
    [
      ['--app=./t.js', '--broker', 'redis://h/0', '--result-backend', 'redis://h/1', 'call', 'proj.add'],
      ['call', '--app=./t.js', '--broker', 'redis://h/0', '--result-backend', 'redis://h/1', 'proj.add'],
    ],
    [
      ['-A./t.js', '-q', '-C', '--no-color', '--quiet', 'status'],
      ['status', '-A./t.js', '-q', '-C', '--no-color', '--quiet'],
    ],
    [
      ['--workdir', '/srv', '--config', 'celeryconfig.js', 'purge', '-f'],
      ['purge', '--workdir', '/srv', '--config', 'celeryconfig.js', '-f'],
    ],
    [
      ['-j', '--debug', 'result', 'abc'],
      ['result', '-j', '--debug', 'abc'],
    ],
    // A topic's command is two words.
    [
      ['-b', 'redis://h/0', 'schedule', 'ls', '--json'],
      ['schedule', 'ls', '-b', 'redis://h/0', '--json'],
    ],
    // multi passes them on to every node: at the end, before `--`, as Celery's multi rearranges its line.
    [
      ['-A', './t.js', 'multi', 'start', '2', '-c', '1'],
      ['multi', 'start', '2', '-c', '1', '-A', './t.js'],
    ],
    [
      ['-A', './t.js', 'multi', 'start', '2', '--', '--foo'],
      ['multi', 'start', '2', '-A', './t.js', '--', '--foo'],
    ],
    // tsq's own help, as `celery -A proj --help` prints celery's.
    [['-A', './t.js', '--help'], ['--help']],
  ]
  for (const [argv, expected] of moved) {
    it(`${argv.join(' ')} → ${expected.join(' ')}`, () => assert.deepEqual(hoistGlobalOptions(argv), expected))
  }

  it('-qC: flags without a value, together, as click reads them', () => {
    assert.deepEqual(hoistGlobalOptions(['-qC', 'status']), ['status', '-q', '-C'])
  })

  const unchanged: string[][] = [['worker', '-A', './t.js'], ['--help'], ['-h'], ['--version'], ['-v'], ['version']]
  for (const argv of unchanged) {
    it(`leaves "${argv.join(' ')}" to oclif`, () => assert.deepEqual(hoistGlobalOptions(argv), argv))
  }

  // What click says to `celery` for the same line; exit 64 (code USAGE).
  const refused: Array<[string[], string]> = [
    [['-A'], "Option '-A' requires an argument."],
    [['-b', 'amqp://h//', '--app'], "Option '--app' requires an argument."],
    [['-A', './t.js'], 'Missing command.'],
    [['--bogus', 'worker'], 'No such option: --bogus'],
    [['-A', './t.js', '--bogus', 'worker'], 'No such option: --bogus'],
    [['-qx', 'status'], 'No such option: -qx'],
    [['--no-color=yes', 'status'], "Option '--no-color' does not take a value."],
  ]
  for (const [argv, message] of refused) {
    it(`refuses "${argv.join(' ')}": ${message}`, () => assert.throws(() => hoistGlobalOptions(argv), { code: 'USAGE', message }))
  }

  it('knows every topic the CLI has', () => {
    const topics = new Set(
      Object.keys(COMMANDS)
        .filter((id) => id.includes(':'))
        .map((id) => id.split(':')[0]!),
    )
    assert.deepEqual([...topics].sort(), [...TOPICS].sort())
  })
})
