// Kubernetes probes for any long-running tsq process: /healthz (the event
// loop turns), /readyz (what the process calls ready), /metrics and /load,
// served from a thread of their own so a busy main loop answers in time.
export { HealthServer, HealthPortError, parseHealthListen, mainThreadTask, DEFAULT_STUCK_AFTER_S } from './health-server.js'
export type { HealthOptions } from './health-server.js'
