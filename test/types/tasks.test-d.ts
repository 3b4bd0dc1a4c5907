// Typed tasks, checked by the compiler, not run: app.task() infers a task's
// arguments and result from its function (bound and async ones too), so
// delay(), applyAsync(), apply(), s(), si(), map() and get() are typed;
// app.remote() and sendTask<R>() type tasks defined elsewhere; chain(),
// group(), chord() and sendMany() are typed by their signatures. Each
// `@ts-expect-error` line must fail to compile: if a type loosens, tsc
// reports the directive as unused and `npm test`'s typecheck fails. Compiled
// with tsconfig.test.json; tasks-js.test-d.js checks the built .d.ts from
// JavaScript (tsconfig.types.json).
import {
  createApp,
  signature,
  TaskError,
  type AsyncResult,
  type EagerResult,
  type GroupResult,
  type RemoteTask,
  type Signature,
  type Task,
  type TaskContext,
} from '../../src/index.js'

/** True only when X and Y are the same type (not merely assignable). */
type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false
function expectType<T>(_value: T): void {}
function same<X, Y>(_proof: Equal<X, Y>): void {}
/** Compiles only when the value's type is exactly T: `is<AsyncResult<number>>()(r, true)`. */
const is =
  <T>() =>
  <X>(_value: X, _proof: Equal<X, T>): void => {}

export async function typedTasks(): Promise<void> {
  const app = createApp({ broker: 'file:///tmp/tsq-types', conf: { task_always_eager: true } })

  const add = app.task('proj.add', (x: number, y: number) => x + y)
  is<Task<[x: number, y: number], number>>()(add, true)

  const r = await add.delay(1, 2)
  is<AsyncResult<number>>()(r, true)
  // @ts-expect-error is<>() itself fails on a type that is not exactly the value's
  is<AsyncResult<string>>()(r, true)
  const n: number = await r.get()
  expectType<number>(n)
  const n2: number = await (await add.delay(1, 2)).get({ timeout: 5 })
  expectType<number>(n2)

  // @ts-expect-error a string is not a number
  await add.delay('a')
  // @ts-expect-error two arguments, not three
  await add.delay(1, 2, 3)
  // @ts-expect-error two arguments, not one
  await add.delay(1)
  // @ts-expect-error the result is a number
  const s: string = await (await add.delay(1, 2)).get()
  expectType<string>(s)

  // get({ propagate: false }) may give the TaskError instead: unknown until narrowed.
  const maybe = await (await add.delay(1, 2)).get({ propagate: false })
  // @ts-expect-error unknown, not number
  expectType<number>(maybe)
  if (maybe instanceof TaskError) expectType<string>(maybe.excType)

  // applyAsync(args, kwargs?, options?)
  same<Awaited<ReturnType<typeof add.applyAsync>>, AsyncResult<number>>(true)
  await add.applyAsync([1, 2])
  await add.applyAsync([1, 2], {}, { countdown: 5, queue: 'math' })
  // @ts-expect-error the arguments are [number, number]
  await add.applyAsync(['1', 2])
  // @ts-expect-error a task that needs arguments needs them
  await add.applyAsync()
  // @ts-expect-error not a send option
  await add.applyAsync([1, 2], {}, { countdwn: 5 })

  // apply(): eager, an EagerResult of the same type.
  const eager = await add.apply([1, 2])
  is<EagerResult<number>>()(eager, true)
  // @ts-expect-error the arguments are [number, number]
  await add.apply([1])

  // Async functions unwrap their promise.
  const fetchLen = app.task('proj.len', async (url: string): Promise<number> => url.length)
  is<Task<[url: string], number>>()(fetchLen, true)
  const len: number = await (await fetchLen.delay('x')).get()
  expectType<number>(len)

  // Optional parameters may be left out; rest parameters take any number.
  const greet = app.task('proj.greet', (name: string, punctuation?: string) => `hi ${name}${punctuation ?? '!'}`)
  await greet.delay('ann')
  await greet.delay('ann', '?')
  // @ts-expect-error the second is a string
  await greet.delay('ann', 1)
  const total = app.task('proj.total', (...xs: number[]) => xs.reduce((a, b) => a + b, 0))
  await total.delay()
  await total.delay(1, 2, 3)
  // @ts-expect-error numbers only
  await total.delay(1, '2')

  // bind: true: the first parameter is the running task's context, not an argument.
  const bound = app.task('proj.bound', (ctx, x: number) => `${ctx.id}:${x}`, { bind: true })
  is<Task<[x: number], string>>()(bound, true)
  await bound.delay(1)
  // @ts-expect-error the context is not passed by the sender
  await bound.delay({} as TaskContext, 1)

  // A task taking nothing takes nothing.
  const ping = app.task('proj.ping', () => 'pong' as const)
  await ping.delay()
  await ping.applyAsync()
  // @ts-expect-error no arguments
  await ping.delay(1)

  // Signatures: s() takes the last arguments (the parent's result goes first), si() all of them.
  const mul = app.task('proj.mul', (x: number, factor: number) => x * factor)
  const full = mul.s(2, 3)
  is<Signature<number>>()(full, true)
  mul.s(10)
  mul.s()
  // @ts-expect-error the last argument is a number
  mul.s('10')
  // @ts-expect-error two at most
  mul.s(1, 2, 3)
  mul.si(2, 3)
  // @ts-expect-error an immutable signature gets no parent result: every argument
  mul.si(2)

  // map, starmap, chunks: a list of results.
  const double = app.task('proj.double', (x: number) => 2 * x)
  same<ReturnType<typeof double.map>, Signature<number[]>>(true)
  double.map([1, 2, 3])
  // @ts-expect-error items are numbers
  double.map(['1'])
  // @ts-expect-error map calls with one argument; add needs two
  add.map([1, 2])
  add.starmap([
    [1, 2],
    [3, 4],
  ])
  // @ts-expect-error each item is the arguments of one call
  add.starmap([[1]])
  same<ReturnType<typeof add.chunks>, Signature<number[]>[]>(true)

  // Chains: typed by the last step's result when its signature says it.
  const chained = await app.chain(add.s(1, 2), mul.s(10))
  is<AsyncResult<number>>()(chained, true)
  const stepped = await app.chain(add.s(1, 2), greet.s())
  is<AsyncResult<string>>()(stepped, true)
  // An untyped last step: a task's result or, for a group, a GroupResult.
  const loose = await app.chain(add.s(1, 2), signature('proj.somewhere'))
  is<AsyncResult | GroupResult>()(loose, true)
  const steps: Signature[] = [add.s(1, 2)]
  const spread = await app.chain(...steps)
  is<AsyncResult | GroupResult>()(spread, true)

  // Groups: get() lists each member's result.
  const g = await app.group(add.s(1, 2), greet.s('ann'))
  const values = await g.get()
  is<[number, string]>()(values, true)
  // @ts-expect-error the second is a string
  const wrong: [number, number] = await g.get()
  expectType<[number, number]>(wrong)
  const many = await (await app.group(...[1, 2, 3].map((i) => add.s(i, i)))).get()
  is<number[]>()(many, true)

  // Chords: the body's result.
  const chord = await app.chord([add.s(1, 2), add.s(3, 4)], app.task('proj.tsum', (xs: number[]) => xs.length).s())
  is<AsyncResult<number>>()(chord, true)

  // sendMany: each result typed.
  const sent = await app.sendMany([add.s(1, 2), greet.s('ann')])
  is<[AsyncResult<number>, AsyncResult<string>]>()(sent, true)

  // Tasks defined elsewhere: sendTask<R>() and app.remote<A, R>().
  const byName = await app.sendTask<number>('proj.add', [1, 2])
  is<AsyncResult<number>>()(byName, true)
  const untyped = await app.sendTask('proj.add', [1, 2], {}, { countdown: 1 })
  is<AsyncResult>()(untyped, true)

  const remoteAdd = app.remote<[x: number, y: number], number>('proj.add', { queue: 'math' })
  is<RemoteTask<[x: number, y: number], number>>()(remoteAdd, true)
  const remoteSum: number = await (await remoteAdd.delay(1, 2)).get()
  expectType<number>(remoteSum)
  await remoteAdd.applyAsync([1, 2], {}, { priority: 5 })
  // @ts-expect-error a string is not a number
  await remoteAdd.delay('a')
  // @ts-expect-error two arguments, not three
  await remoteAdd.delay(1, 2, 3)
  // @ts-expect-error the result is a number
  const remoteWrong: string = await (await remoteAdd.delay(1, 2)).get()
  expectType<string>(remoteWrong)
  const viaRemote = await app.chain(remoteAdd.s(1, 2), remoteAdd.s(3))
  is<AsyncResult<number>>()(viaRemote, true)

  // Untyped code keeps compiling: a Task is any task, a Signature any signature.
  const anyTask: Task = add
  await anyTask.delay('whatever', 1, 2)
  const registered = app.tasks.get('proj.add')
  await registered?.delay(1, 2)
  const anySig: Signature = add.s(1, 2)
  expectType<Signature>(anySig)
}
