import { Chalk, type ChalkInstance } from 'chalk'

/** Colour only for a terminal, never with NO_COLOR or --no-color. */
export function makeChalk(noColorFlag: boolean, stream: NodeJS.WriteStream = process.stdout): ChalkInstance {
  const off = noColorFlag || 'NO_COLOR' in process.env || !stream.isTTY
  return new Chalk({ level: off ? 0 : 1 })
}
