// The app a worker runs when started without -A, as `celery worker` without
// --app runs Celery's default app: no tasks of its own beyond the built-in
// ones, answering remote control. A module of its own (not an object made in
// the worker) because prefork and threads slots load the app by path.
import { createApp } from './app.js'

export const app = createApp({ name: 'default' })
