// tsq-test: slow
// The db+ result backend on sqlite, both ways with Python Celery (helpers/db-results-suite.ts).
import { dbResultsSuite } from './helpers/db-results-suite.js'

await dbResultsSuite('sqlite')
