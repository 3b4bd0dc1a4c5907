// tsq-test: slow 2
// Issue 31: the db+ result backend on postgresql, both ways with Python Celery (helpers/db-results-suite.ts).
import { dbResultsSuite } from './helpers/db-results-suite.js'

await dbResultsSuite('postgresql')
