// The part of the `debug` package (ioredis's logger) that tsq sets: where its lines go.
declare module 'debug' {
  interface Debug {
    log: (...args: unknown[]) => void
    inspectOpts?: Record<string, unknown>
  }
  const createDebug: Debug
  export default createDebug
}
