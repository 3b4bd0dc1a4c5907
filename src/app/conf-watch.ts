// An app's options and conf are plain objects that users write at run time
// (`app.conf.task_routes = {...}` in a test's set-up) and that load-app fills
// in after createApp. What a send derives from them (the resolved broker
// config, task_queues' definitions, routes, the encoder) is cached; this
// counts the writes, so a cache knows it is stale by comparing one number.
//
// The rule: any assignment or deletion of a member of app.options or app.conf
// (through the app, or through the options object given to createApp) bumps
// the version, and the next send rebuilds what it caches. A write inside a
// setting's own value (`app.conf.task_routes['a'] = 'q'`) is not seen until
// the setting is assigned again, as Celery's own router and queues, which are
// built once, never see it.

export class ConfWatch {
  version = 0
  private readonly watched = new WeakSet<object>()

  /** `options`, with its writes counted; a conf assigned to it is watched too. */
  watchOptions<T extends { conf?: Record<string, unknown> }>(options: T): T {
    const proxy = new Proxy(
      options,
      this.counting((key, value) =>
        key === 'conf' && value !== null && typeof value === 'object' ? this.watchConf(value as Record<string, unknown>) : value,
      ),
    )
    if (options.conf) proxy.conf = options.conf
    return proxy
  }

  watchConf(conf: Record<string, unknown>): Record<string, unknown> {
    if (this.watched.has(conf)) return conf
    const proxy = new Proxy(conf, this.counting())
    this.watched.add(proxy)
    return proxy
  }

  /** Traps that count every assignment, definition and deletion; `written` may replace the value assigned. */
  private counting<T extends object>(written: (key: string | symbol, value: unknown) => unknown = (_key, value) => value): ProxyHandler<T> {
    return {
      set: (target, key, value) => {
        const set = Reflect.set(target, key, written(key, value))
        this.version += 1
        return set
      },
      deleteProperty: (target, key) => {
        const deleted = Reflect.deleteProperty(target, key)
        this.version += 1
        return deleted
      },
      defineProperty: (target, key, descriptor) => {
        const defined = Reflect.defineProperty(target, key, descriptor)
        this.version += 1
        return defined
      },
    }
  }

  /** A change the proxies cannot see (setupSecurity, configure): stale as after a write. */
  touch(): void {
    this.version += 1
  }
}
