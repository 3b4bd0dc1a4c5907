// A port of Celery 5.2.6's t/integration/tasks.py for a tsq worker: the same
// task names and behaviour, with Python's argument binding, TypeError texts and
// exception types where Celery's integration suite reads them
// (test/celery-suite/run.sh runs that suite against `tsq worker -A` this file).
// Plain JS so that prefork slots load it without a TypeScript loader.
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createApp } from 'tsq'

// The settings Celery's test app has (celery.contrib.testing.app's
// DEFAULT_TEST_CONFIG with the suite's conftest), so `inspect conf` lists the same keys.
// Its broker_heartbeat is 0 (off), as Celery's in-process worker runs;
// CELERY_SUITE_BROKER_HEARTBEAT gives another value, or leaves it out when empty.
const heartbeat = process.env.CELERY_SUITE_BROKER_HEARTBEAT ?? '0'
export const app = createApp({
  name: 't.integration',
  // Our interop test (test/interop/celery-suite-shapes.test.ts) runs these on a queue of its own.
  ...(process.env.CELERY_SUITE_QUEUE ? { defaultQueue: process.env.CELERY_SUITE_QUEUE } : {}),
  conf: {
    worker_hijack_root_logger: false,
    worker_log_color: false,
    accept_content: ['json'],
    enable_utc: true,
    timezone: 'UTC',
    include: ['t.integration.tasks'],
    ...(heartbeat === undefined || heartbeat === '' ? {} : { broker_heartbeat: Number(heartbeat) }),
  },
})

const P = 't.integration.tasks.'
// The suite's conftest get_redis_connection(), pointed by run.sh at a Redis of its own.
const REDIS_URL = process.env.CELERY_SUITE_REDIS_URL ?? 'redis://127.0.0.1:6379/0'
let redisClient
function redis() {
  redisClient ??= new Redis(REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 3 })
  return redisClient
}

/** An error Python rebuilds as `module.name(*args)`. */
function pyError(name, args, module = 'builtins') {
  const error = new Error(args.length ? String(args[0]) : '')
  error.name = name
  error.args = args
  error.module = module
  return error
}

const typeError = (message) => pyError('TypeError', [message])

/** Python's repr of a JSON value, enough for TypeError texts. */
function pyTypeName(v) {
  if (v === null || v === undefined) return 'NoneType'
  if (typeof v === 'boolean') return 'bool'
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float'
  if (typeof v === 'string') return 'str'
  if (Array.isArray(v)) return 'list'
  return 'dict'
}

function isNum(v) {
  return typeof v === 'number' || typeof v === 'boolean'
}

/** Python's `a + b` on JSON values. */
function pyAdd(a, b) {
  if (isNum(a) && isNum(b)) return Number(a) + Number(b)
  if (typeof a === 'string' && typeof b === 'string') return a + b
  if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b]
  if (Array.isArray(a)) throw typeError(`can only concatenate list (not "${pyTypeName(b)}") to list`)
  if (typeof a === 'string') throw typeError(`can only concatenate str (not "${pyTypeName(b)}") to str`)
  throw typeError(`unsupported operand type(s) for +: '${pyTypeName(a)}' and '${pyTypeName(b)}'`)
}

function pySum(items) {
  if (!Array.isArray(items)) throw typeError(`'${pyTypeName(items)}' object is not iterable`)
  return items.reduce((acc, item) => {
    if (!isNum(item)) throw typeError(`unsupported operand type(s) for +: 'int' and '${pyTypeName(item)}'`)
    return acc + Number(item)
  }, 0)
}

const truthy = (v) =>
  !(
    v === null ||
    v === undefined ||
    v === false ||
    v === 0 ||
    v === '' ||
    (Array.isArray(v) && v.length === 0) ||
    (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0)
  )

const quoted = (names) => names.map((n) => `'${n}'`)
function listNames(names) {
  const q = quoted(names)
  return q.length === 1 ? q[0] : q.length === 2 ? `${q[0]} and ${q[1]}` : `${q.slice(0, -1).join(', ')} and ${q.at(-1)}`
}

/**
 * Binds a message's args and kwargs to a Python parameter list, as a Python
 * call does: `params` are names, `[name, default]`, `'*args'`, `'**kwargs'`;
 * names after `*args` are keyword-only. Throws Python's TypeError texts.
 */
function bindPy(fname, params, args, kwargs) {
  const positional = []
  const kwOnly = []
  let varArgs = false
  let varKw = false
  for (const p of params) {
    if (p === '*args' || p === '*_args') varArgs = true
    else if (p.startsWith?.('**')) varKw = true
    else (varArgs ? kwOnly : positional).push(Array.isArray(p) ? { name: p[0], default: p[1], has: true } : { name: p, has: false })
  }
  const bound = {}
  positional.forEach((p, i) => {
    if (i < args.length) bound[p.name] = args[i]
  })
  const extra = args.slice(positional.length)
  if (extra.length && !varArgs) {
    const required = positional.filter((p) => !p.has).length
    const takes = required === positional.length ? `${positional.length}` : `from ${required} to ${positional.length}`
    const plural = positional.length === 1 && required === positional.length ? 'argument' : 'arguments'
    throw typeError(`${fname}() takes ${takes} positional ${plural} but ${args.length} ${args.length === 1 ? 'was' : 'were'} given`)
  }
  const rest = {}
  for (const [key, value] of Object.entries(kwargs ?? {})) {
    const p = positional.find((q) => q.name === key) ?? kwOnly.find((q) => q.name === key)
    if (!p) {
      if (!varKw) throw typeError(`${fname}() got an unexpected keyword argument '${key}'`)
      rest[key] = value
      continue
    }
    if (key in bound) throw typeError(`${fname}() got multiple values for argument '${key}'`)
    bound[key] = value
  }
  const missing = positional.filter((p) => !(p.name in bound) && !p.has).map((p) => p.name)
  if (missing.length)
    throw typeError(
      `${fname}() missing ${missing.length} required positional argument${missing.length > 1 ? 's' : ''}: ${listNames(missing)}`,
    )
  const missingKw = kwOnly.filter((p) => !(p.name in bound) && !p.has).map((p) => p.name)
  if (missingKw.length)
    throw typeError(
      `${fname}() missing ${missingKw.length} required keyword-only argument${missingKw.length > 1 ? 's' : ''}: ${listNames(missingKw)}`,
    )
  for (const p of [...positional, ...kwOnly]) if (!(p.name in bound)) bound[p.name] = p.default
  return { bound, extra, rest }
}

/**
 * `@shared_task def fname(params): ...`: registered as t.integration.tasks.fname;
 * `fn(bound, extra, ctx)` gets the bound names, the *args and the task context.
 */
function pyTask(fname, params, fn, options = {}) {
  const { name = P + fname, ...taskOptions } = options
  return app.task(
    name,
    function (ctx, ...args) {
      const { bound, extra } = bindPy(fname, params, args, ctx.kwargs)
      return fn(bound, extra, ctx)
    },
    { ...taskOptions, bind: true },
  )
}

// ---- signatures as Celery's JSON has them -------------------------------

const sig = (fname, args = [], kwargs = {}, options = {}, immutable = false) => ({
  task: P + fname,
  args,
  kwargs,
  options,
  subtask_type: null,
  immutable,
})
const si = (fname, args = [], kwargs = {}) => sig(fname, args, kwargs, {}, true)
const chainSig = (tasks, options = {}) => ({
  task: 'celery.chain',
  args: [],
  kwargs: { tasks },
  options,
  subtask_type: 'chain',
  immutable: false,
})
const groupSig = (tasks, options = {}) => ({
  task: 'celery.group',
  args: [],
  kwargs: { tasks },
  options,
  subtask_type: 'group',
  immutable: false,
})
const chordSig = (header, body, options = {}) => ({
  task: 'celery.chord',
  args: [],
  kwargs: { header: groupSig(header), body, kwargs: {} },
  options,
  subtask_type: 'chord',
  immutable: false,
})

const sleep = (seconds, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, Number(seconds) * 1000)
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        reject(signal.reason)
      },
      { once: true },
    )
  })

// ---- the tasks --------------------------------------------------------------

export const identity = pyTask('identity', ['x'], ({ x }) => x)

export const add = pyTask('add', ['x', 'y', ['z', null]], ({ x, y, z }) => (truthy(z) ? pyAdd(pyAdd(x, y), z) : pyAdd(x, y)))

export const writeToFileAndReturnInt = pyTask('write_to_file_and_return_int', ['file_name', 'i'], async ({ file_name, i }) => {
  const { appendFile } = await import('node:fs/promises')
  await appendFile(String(file_name), `${i}\n`)
  return i
})

export const addNotTyped = pyTask('add_not_typed', ['x', 'y'], ({ x, y }) => pyAdd(x, y))

export const addIgnoreResult = pyTask('add_ignore_result', ['x', 'y'], ({ x, y }) => pyAdd(x, y), { ignoreResult: true })

export const raiseError = pyTask('raise_error', ['*args'], () => {
  throw pyError('ValueError', ['deliberate error'])
})

export const chainAdd = pyTask('chain_add', ['x', 'y'], async ({ x, y }) => {
  await app.chain(sig('add', [x, x]), sig('add', [y]))
  return null
})

export const chordAdd = pyTask('chord_add', ['x', 'y'], async ({ x, y }) => {
  await app.chord([sig('add', [x, x])], sig('add', [y]))
  return null
})

export const delayedSum = pyTask('delayed_sum', ['numbers', ['pause_time', 1]], async ({ numbers, pause_time }, _, ctx) => {
  await sleep(pause_time, ctx.signal)
  return pySum(numbers)
})

export const delayedSumWithSoftGuard = pyTask(
  'delayed_sum_with_soft_guard',
  ['numbers', ['pause_time', 1]],
  async ({ numbers, pause_time }, _, ctx) => {
    try {
      await sleep(pause_time, ctx.signal)
      return pySum(numbers)
    } catch (error) {
      if (error?.name === 'SoftTimeLimitExceeded') return 0
      throw error
    }
  },
)

export const tsum = pyTask('tsum', ['nums'], ({ nums }) => pySum(nums))

export const addReplaced = pyTask('add_replaced', ['x', 'y'], ({ x, y }, _, ctx) => ctx.replace(sig('add', [x, y])))

function linkSig(linkMsg) {
  return linkMsg === null || linkMsg === undefined ? sig('redis_echo') : sig('redis_echo', [linkMsg], {}, {}, true)
}

export const replaceWithChain = pyTask('replace_with_chain', ['*args', ['link_msg', null]], ({ link_msg }, args, ctx) => {
  return ctx.replace(chainSig([sig('identity', args), sig('identity')], { link: [linkSig(link_msg)] }))
})

export const replaceWithChainWhichRaises = pyTask(
  'replace_with_chain_which_raises',
  ['*args', ['link_msg', null]],
  ({ link_msg }, args, ctx) => {
    return ctx.replace(chainSig([sig('identity', args), sig('raise_error')], { link_error: [linkSig(link_msg)] }))
  },
)

export const replaceWithEmptyChain = pyTask('replace_with_empty_chain', ['*_args'], (_b, _a, ctx) => ctx.replace(chainSig([])))

export const addToAll = pyTask('add_to_all', ['nums', 'val'], ({ nums, val }, _, ctx) =>
  ctx.replace(groupSig(nums.map((num) => sig('add', [num, val])))),
)

export const addToAllToChord = pyTask('add_to_all_to_chord', ['nums', 'val'], async ({ nums, val }, _, ctx) => {
  for (const num of nums) await ctx.addToChord(sig('add', [num, val]))
  return 0
})

export const addChordToChord = pyTask('add_chord_to_chord', ['nums', 'val'], async ({ nums, val }, _, ctx) => {
  // Celery's `group(subtasks) | tsum.s()` is a chord.
  await ctx.addToChord(
    chordSig(
      nums.map((num) => sig('add', [num, val])),
      sig('tsum'),
    ),
  )
  return 0
})

export const printUnicode = pyTask(
  'print_unicode',
  [
    ['log_message', 'håå®ƒ valmuefrø'],
    ['print_message', 'hiöäüß'],
  ],
  ({ log_message, print_message }) => {
    console.warn(log_message)
    console.log(print_message)
    return null
  },
)

export const returnException = pyTask('return_exception', ['e'], ({ e }) => [e, true])

export const sleeping = pyTask('sleeping', ['i', '**_'], async ({ i }, _, ctx) => {
  await sleep(i, ctx.signal)
  return null
})

export const ids = pyTask('ids', ['i'], ({ i }, _, ctx) => [ctx.rootId, ctx.parentId, i])

export const collectIds = pyTask('collect_ids', ['res', 'i'], ({ res, i }, _, ctx) => [res, [ctx.rootId, ctx.parentId, i]])

/** Celery's ExpectedException (t.integration.tasks): Python compares it by its args. */
const expectedException = (args) => pyError('ExpectedException', args, 't.integration.tasks')

// Python keeps `self.attempt` on the task object, which lives in the pool process: module state here.
let attempt = 0
export const retry = pyTask(
  'retry',
  [['return_value', null]],
  ({ return_value }, _, ctx) => {
    if (truthy(return_value)) {
      console.log('attempt', attempt)
      if (attempt >= 3) {
        attempt = 0
        return return_value
      }
      attempt += 1
    }
    return ctx.retry({ exc: expectedException([]), countdown: 5 })
  },
  { defaultRetryDelay: 1 },
)

export const retryOnce = pyTask(
  'retry_once',
  ['*args', ['expires', 60.0], ['max_retries', 1], ['countdown', 0.1]],
  ({ max_retries, countdown }, _, ctx) => {
    if (ctx.retries) return ctx.retries
    return ctx.retry({ countdown, maxRetries: max_retries })
  },
  { maxRetries: 1 },
)

export const retryOncePriority = pyTask(
  'retry_once_priority',
  ['*args', ['expires', 60.0], ['max_retries', 1], ['countdown', 0.1]],
  ({ max_retries, countdown }, _, ctx) => {
    if (ctx.retries) return ctx.deliveryInfo.priority
    return ctx.retry({ countdown, maxRetries: max_retries })
  },
  { maxRetries: 1 },
)

export const redisEcho = pyTask('redis_echo', ['message', ['redis_key', 'redis-echo']], async ({ message, redis_key }) => {
  await redis().rpush(redis_key, typeof message === 'string' ? message : JSON.stringify(message))
  return null
})

async function redisCountKey(key) {
  await redis().incr(key)
}

export const redisCount = pyTask('redis_count', [['redis_key', 'redis-count']], async ({ redis_key }) => {
  await redisCountKey(redis_key)
  return null
})

export const secondOrderReplace1 = pyTask('second_order_replace1', [['state', false]], async ({ state }, _, ctx) => {
  if (!truthy(state)) {
    await redis().rpush('redis-echo', 'In A')
    return ctx.replace(chainSig([sig('second_order_replace2'), si('second_order_replace1', [], { state: true })]))
  }
  await redis().rpush('redis-echo', 'Out A')
  return null
})

export const secondOrderReplace2 = pyTask('second_order_replace2', [['state', false]], async ({ state }, _, ctx) => {
  if (!truthy(state)) {
    await redis().rpush('redis-echo', 'In B')
    return ctx.replace(chainSig([sig('redis_echo', ['In/Out C']), si('second_order_replace2', [], { state: true })]))
  }
  await redis().rpush('redis-echo', 'Out B')
  return null
})

// Celery returns the chain's AsyncResult, which its JSON encoder stores as
// as_tuple(): ((id, parent's tuple), None), a group's ((id, parent), [members]).
// The ids are fixed here (Celery's freeze) so the tuple names every step.
export const buildChainInsideTask = pyTask('build_chain_inside_task', [], async () => {
  const [id1, id2, m1, m2, groupId, id5] = Array.from({ length: 6 }, () => randomUUID())
  const withId = (s, id) => ({ ...s, options: { ...s.options, task_id: id } })
  const last = await app.chain(
    withId(sig('add', [1, 1]), id1),
    withId(sig('add', [2]), id2),
    groupSig([withId(sig('add', [3]), m1), withId(sig('add', [4]), m2)], { task_id: groupId }),
    withId(sig('add', [5]), id5),
  )
  const first = [[id1, null], null]
  const second = [[id2, first], null]
  const group = [
    [groupId, second],
    [
      [[m1, second], null],
      [[m2, second], null],
    ],
  ]
  return [[last.id, group], null]
})

export const fail = pyTask('fail', ['*args'], (_b, args) => {
  throw expectedException(['Task expected to fail', ...args])
})

export const failReplaced = pyTask('fail_replaced', ['*args'], (_b, args, ctx) => ctx.replace(si('fail', args)))

export const returnPriority = pyTask('return_priority', ['*_args'], (_b, _a, ctx) => `Priority: ${ctx.deliveryInfo.priority ?? 'None'}`)

export const returnProperties = pyTask('return_properties', [], (_b, _a, ctx) => ctx.properties ?? null)

export const autoRetryClassTask = pyTask(
  'run',
  [],
  (_b, _a, ctx) => {
    if (ctx.retries) return ctx.retries
    throw pyError('ValueError', [])
  },
  { name: 'auto_retry_class_task', autoretryFor: ['ValueError'], retryKwargs: { maxRetries: 1 }, retryBackoff: true },
)

// Signatures returned as values, as Celery's JSON encoder stores a Signature (a dict).
export const returnNestedSignatureChainChain = pyTask('return_nested_signature_chain_chain', [], () => chainSig([sig('add')]))
export const returnNestedSignatureChainGroup = pyTask('return_nested_signature_chain_group', [], () => groupSig([sig('add')]))
export const returnNestedSignatureChainChord = pyTask('return_nested_signature_chain_chord', [], () => chordSig([sig('add')], sig('add')))
export const returnNestedSignatureGroupChain = pyTask('return_nested_signature_group_chain', [], () => groupSig([chainSig([sig('add')])]))
export const returnNestedSignatureGroupGroup = pyTask('return_nested_signature_group_group', [], () => groupSig([groupSig([sig('add')])]))
export const returnNestedSignatureGroupChord = pyTask('return_nested_signature_group_chord', [], () =>
  groupSig([chordSig([sig('add')], sig('add'))]),
)
export const returnNestedSignatureChordChain = pyTask('return_nested_signature_chord_chain', [], () =>
  chordSig([chainSig([sig('add')])], sig('add')),
)
export const returnNestedSignatureChordGroup = pyTask('return_nested_signature_chord_group', [], () =>
  chordSig([groupSig([sig('add')])], sig('add')),
)
export const returnNestedSignatureChordChord = pyTask('return_nested_signature_chord_chord', [], () =>
  chordSig([chordSig([sig('add')], sig('add'))], sig('add')),
)

/** Celery's Signature.from_dict and its walk over tasks and body: every nested member must be a signature. */
export const rebuildSignature = pyTask('rebuild_signature', ['sig_dict'], ({ sig_dict }) => {
  const isSig = (s) => typeof s === 'object' && s !== null && !Array.isArray(s) && typeof s.task === 'string'
  const walk = (s) => {
    if (!isSig(s)) throw typeError(`${JSON.stringify(s)} is not a signature object`)
    const kind = s.subtask_type
    const kwargs = s.kwargs ?? {}
    if (kind === 'chain' || kind === 'group') for (const t of kwargs.tasks ?? []) walk(t)
    if (kind === 'chord') {
      const header = kwargs.header
      for (const t of Array.isArray(header) ? header : isSig(header) ? (header.kwargs?.tasks ?? [header]) : []) walk(t)
      walk(kwargs.body)
    }
  }
  walk(sig_dict)
  return null
})

export const errbackOldStyle = pyTask('errback_old_style', ['request_id'], async ({ request_id }) => {
  await redisCountKey(request_id)
  return request_id
})

/** Celery calls an errback taking (request, exc, traceback) in the worker, with the failed task's request. */
export const errbackNewStyle = pyTask(
  'errback_new_style',
  ['request', 'exc', 'tb'],
  async ({ request }) => {
    await redisCountKey(request.id)
    return request.id
  },
  { requestErrback: true },
)

// celery.contrib.testing.tasks.ping: what Celery's start_worker() sends to know the worker is up.
export const ping = app.task('celery.ping', () => 'pong')
