// What sends a task and writes its signatures, typed by the task's arguments
// `A` and what it returns `R`: a Task (app.task(), defined in this process)
// and a RemoteTask (app.remote(), defined elsewhere) are both TaskHandles and
// differ only in how a send goes out.
import type { DedupOptions, OnceSendOptions } from '../locks/index.js'
import type { SendTaskOptions } from '../client/index.js'
import { signature, type Signature } from '../protocol/index.js'
import type { AsyncResult } from './async-result.js'

export interface ApplyOptions extends Omit<SendTaskOptions, 'args' | 'kwargs' | 'embed'> {
  link?: Signature | Signature[]
  linkError?: Signature | Signature[]
  /** For a task with the `once` option: this send's `graceful` and `timeout`. */
  once?: OnceSendOptions
  /** Deduplication at send (docs/deduplication.md): `{ id, mode, ttl, extend, replace }`; null: not the task's default. */
  dedup?: DedupOptions | null
}

/**
 * The arguments a signature of a task taking `A` may carry: any tail of them,
 * down to none. A chain step or a callback gets the parent's result put in
 * front of its own arguments (Celery's partial signatures), so `mul.s(10)`
 * fills the last parameter and leaves the first to the step before.
 */
export type TrailingArgs<A extends unknown[]> = A extends []
  ? A
  : A extends [unknown, ...infer Rest]
    ? A | TrailingArgs<Rest>
    : A extends [(infer _First)?, ...infer Rest]
      ? Rest extends A
        ? A
        : A | TrailingArgs<Rest>
      : A

/** applyAsync()'s and apply()'s parameters: the arguments may be left out only when the task needs none. */
export type ApplyCall<A extends unknown[], O> = [] extends A
  ? [args?: A, kwargs?: Record<string, unknown>, options?: O]
  : [args: A, kwargs?: Record<string, unknown>, options?: O]

/** What `map(it)` calls the task with: one item, so only a task that needs one argument at most. */
export type OneArg<A extends unknown[]> = [A[0]] extends A ? A[0] : never

export abstract class TaskHandle<A extends unknown[] = unknown[], R = unknown> {
  abstract readonly name: string

  /** Sends the task with these arguments: `await add.delay(2, 2)`. */
  delay(...args: A): Promise<AsyncResult<R>> {
    return this.send(args, {}, {}) as Promise<AsyncResult<R>>
  }

  /** Sends the task with arguments, keyword arguments and send options (Celery's apply_async). */
  applyAsync(...call: ApplyCall<A, ApplyOptions>): Promise<AsyncResult<R>> {
    const [args = [], kwargs = {}, options = {}] = call
    return this.send(args, kwargs, options) as Promise<AsyncResult<R>>
  }

  /** delay() and applyAsync(), with the arguments as the message carries them; `options` are this send's own. */
  protected abstract send(args: unknown[], kwargs: Record<string, unknown>, options: ApplyOptions): Promise<AsyncResult>

  /** What a signature of this task carries in its options beyond the call's own. */
  protected signatureOptions(): Record<string, unknown> {
    return {}
  }

  /**
   * A signature for chains and callbacks: `add.s(2, 2)`, or with the last
   * arguments only, `add.s(2)`, the parent's result going first.
   */
  s(...args: TrailingArgs<A>): Signature<R> {
    return signature<R>(this.name, args, {}, this.signatureOptions())
  }

  /** An immutable signature: the parent's result is not prepended, so it takes every argument. */
  si(...args: A): Signature<R> {
    return signature<R>(this.name, args, {}, { ...this.signatureOptions(), immutable: true })
  }

  /**
   * Celery's `task.map(it)`: one `celery.map` task that calls this task on
   * each item, in order, in the worker that takes it; its result is the list.
   * Send it as any signature: `await app.chain(add.map([1, 2, 3]))`.
   */
  map(it: Iterable<OneArg<A>>): Signature<R[]> {
    return signature('celery.map', [], { task: signature(this.name), it: [...it] }, { immutable: true })
  }

  /** Celery's `task.starmap(it)`: as map, each item being the arguments of one call. */
  starmap(it: Iterable<A>): Signature<R[]> {
    return signature('celery.starmap', [], { task: signature(this.name), it: [...it] }, { immutable: true })
  }

  /**
   * Celery's `task.chunks(it, n)`: the argument lists cut into chunks of `n`,
   * each one `celery.starmap` task; `await app.group(...add.chunks(pairs, 10))`
   * runs them in parallel, and its result is one list per chunk.
   */
  chunks(it: Iterable<A>, n: number): Signature<R[]>[] {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`chunks(it, n): n must be a whole number of at least 1, got ${n}`)
    const items = [...it]
    const parts: Signature<R[]>[] = []
    for (let i = 0; i < items.length; i += n) parts.push(this.starmap(items.slice(i, i + n)))
    return parts
  }
}
