// @ts-check
// Typed tasks as a JavaScript user sees them: this file imports the built
// package ('tsq', dist/*.d.ts) and is checked with checkJs, not run, so the
// inference app.task() gives TypeScript (arguments from the function's JSDoc,
// the result from what it returns) reaches JavaScript too. Each
// `@ts-expect-error` line must fail to compile.
import { createApp } from 'tsq'

const app = createApp({ broker: 'file:///tmp/tsq-types-js', conf: { task_always_eager: true } })

/**
 * @param {number} x
 * @param {number} y
 */
const addNumbers = (x, y) => x + y

export const add = app.task('proj.add', addNumbers)
export const shout = app.task('proj.shout', /** @param {string} text */ async (text) => text.toUpperCase())

/** @type {import('tsq').RemoteTask<[x: number, y: number], number>} */
export const remoteAdd = app.remote('proj.add')

export async function typedFromJs() {
  /** @type {number} */
  const sum = await (await add.delay(1, 2)).get()
  // @ts-expect-error a string is not a number
  await add.delay('a')
  // @ts-expect-error two arguments, not three
  await add.delay(1, 2, 3)
  // @ts-expect-error the result is a number
  /** @type {string} */ const wrong = await (await add.delay(1, 2)).get()

  /** @type {string} */
  const loud = await (await shout.delay('hi')).get()
  // @ts-expect-error the async function's result is a string
  /** @type {number} */ const notLoud = await (await shout.delay('hi')).get()

  /** @type {number} */
  const chained = await (await app.chain(add.s(1, 2), add.s(3))).get()
  /** @type {number} */
  const remote = await (await app.sendTask(remoteAdd.name, [1, 2])).get().then(() => 3)
  // @ts-expect-error a string is not a number
  await remoteAdd.delay('a', 2)

  // A function without JSDoc takes anything, as before, by its number of parameters.
  const loose = app.task('proj.loose', (a, b) => [a, b])
  await loose.delay('any', { thing: 1 })
  return [sum, wrong, loud, notLoud, chained, remote]
}
