// A command line naming no command of tsq's, found before oclif runs it: oclif
// would say `command inspct:ping not found` and exit 2, a status the exit-code
// table does not have; tsq says which names are near and exits 64, as every
// other usage error. No oclif here.
import { UsageError } from './errors.js'
import { didYouMean } from '../protocol/index.js'

/**
 * The usage error for a command line whose command tsq does not have, or
 * undefined when it names one (or a topic alone, or starts with a flag: oclif
 * then prints help or the version). `ids` are oclif's, topics joined by `:`.
 */
export function unknownCommand(argv: readonly string[], ids: readonly string[]): UsageError | undefined {
  const known = new Set(ids)
  const prefix: string[] = []
  for (const word of argv) {
    if (word.startsWith('-')) return undefined
    const id = [...prefix, word].join(':')
    if (known.has(id)) return undefined
    if (ids.some((other) => other.startsWith(`${id}:`))) {
      prefix.push(word)
      continue
    }
    const below = prefix.length ? `${prefix.join(':')}:` : ''
    const names = ids.filter((other) => other.startsWith(below)).map((other) => other.slice(below.length).split(':')[0]!)
    const spoken = [...prefix, word].join(' ')
    const hint = didYouMean(word, names, (name) => [...prefix, name].join(' '))
    return new UsageError(
      `unknown command ${JSON.stringify(spoken)}${hint}; tsq ${prefix.length ? `${prefix.join(' ')} ` : ''}--help lists them`,
    )
  }
  return undefined
}
