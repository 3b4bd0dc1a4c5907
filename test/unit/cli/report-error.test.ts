// How a command's error is reported: oclif's parse errors become one tsq
// CommandLineError (code USAGE, exit 64) whose line is told by what each error
// carries, never by its class name; the report prints that line with where help
// is, and any other error by its own message and code.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Args, Flags, Parser } from '@oclif/core'
import { CommandLineError, InvalidValueError, UsageError } from '../../../src/cli/errors.js'
import { ExitCode } from '../../../src/cli/exit-codes.js'
import { commandLineErrorOf, reportCliError } from '../../../src/cli/report-error.js'

/** The error oclif's parser throws for `argv` against these flags and arguments. */
async function parseError(argv: string[], input: Parameters<typeof Parser.parse>[1]): Promise<Error> {
  const error = await Parser.parse(argv, { strict: true, ...input }).then(
    () => undefined,
    (e: unknown) => e,
  )
  assert.ok(error instanceof Error, `oclif parsed ${argv.join(' ')}`)
  return error
}

/** What reportCliError writes (stderr, stdout) and the exit code it sets. */
function report(error: Error, mode: { json: boolean; command?: string }): { stderr: string; stdout: string; exitCode: number } {
  const written = { stderr: '', stdout: '' }
  const saved = { stderr: process.stderr.write, stdout: process.stdout.write, exitCode: process.exitCode }
  process.stderr.write = ((chunk: string) => ((written.stderr += chunk), true)) as typeof process.stderr.write
  process.stdout.write = ((chunk: string) => ((written.stdout += chunk), true)) as typeof process.stdout.write
  try {
    reportCliError(error, { debug: false, ...mode })
    return { ...written, exitCode: Number(process.exitCode) }
  } finally {
    process.stderr.write = saved.stderr
    process.stdout.write = saved.stdout
    process.exitCode = saved.exitCode
  }
}

describe("oclif's parse errors as one line", () => {
  const cases: Array<[string, string[], Parameters<typeof Parser.parse>[1], string]> = [
    ['a missing argument', [], { args: { id: Args.string({ required: true }) } }, 'Missing required argument: id'],
    [
      'two missing arguments',
      [],
      { args: { source: Args.string({ required: true }), destination: Args.string({ required: true }) } },
      'Missing required arguments: source, destination',
    ],
    ['an unknown flag', ['x', '--nope'], { args: { id: Args.string() } }, 'Nonexistent flag: --nope'],
    ['an extra argument', ['a', 'b'], { args: { id: Args.string() } }, 'Unexpected argument: b'],
    ['a required flag left out', [], { flags: { n: Flags.integer({ required: true }) } }, 'Missing required flag n'],
    [
      "a flag's dependency left out",
      ['--signal', 'TERM'],
      { flags: { signal: Flags.string({ dependsOn: ['terminate'] }), terminate: Flags.boolean() } },
      'All of the following must be provided when using --signal: --terminate',
    ],
  ]
  for (const [name, argv, input, line] of cases) {
    it(`${name}: ${line}`, async () => {
      const error = commandLineErrorOf(await parseError(argv, input))
      assert.ok(error instanceof CommandLineError)
      assert.ok(error instanceof UsageError)
      assert.equal(error.message, line)
      assert.equal(error.code, 'USAGE')
      assert.equal(error.exitCode, ExitCode.USAGE)
    })
  }

  it('any other error is left as it is: a bad flag value keeps its own class and sentence', () => {
    const invalid = new InvalidValueError("'-c' / '--concurrency'", "'abc' is not a valid integer.")
    assert.equal(commandLineErrorOf(invalid), invalid)
    const bug = new TypeError('x is undefined')
    assert.equal(commandLineErrorOf(bug), bug)
  })
})

describe('reportCliError', () => {
  it("prints a command line's error as one line with where help is, exit 64, code USAGE under --json", async () => {
    const error = commandLineErrorOf(await parseError([], { args: { id: Args.string({ required: true }) } }))
    const out = report(error, { json: true, command: 'result' })
    assert.equal(out.stderr, "Error: Missing required argument: id (try 'tsq result --help')\n")
    assert.equal(out.exitCode, ExitCode.USAGE)
    assert.deepEqual(JSON.parse(out.stdout), {
      error: { code: 'USAGE', message: "Missing required argument: id (try 'tsq result --help')", exitCode: ExitCode.USAGE },
    })
  })

  it("prints a tsq error's first line with no hint, by its code's exit status", () => {
    const out = report(new UsageError('--db x: not a tsq dashboard state file\nmore'), { json: false, command: 'dashboard' })
    assert.equal(out.stderr, 'Error: --db x: not a tsq dashboard state file\n')
    assert.equal(out.exitCode, ExitCode.USAGE)
  })

  it("prints a bad flag value as click's sentence, whatever oclif added around it", () => {
    const invalid = new InvalidValueError("'-c' / '--concurrency'", "'abc' is not a valid integer.")
    invalid.message = `Parsing --concurrency \n\t${invalid.message}\nSee more help with --help`
    const out = report(invalid, { json: false, command: 'worker' })
    assert.equal(out.stderr, "Error: Invalid value for '-c' / '--concurrency': 'abc' is not a valid integer.\n")
    assert.equal(out.exitCode, ExitCode.USAGE)
  })
})
