// tsq-test: slow 2
// Issue 31: the db+ result backend on mysql, both ways with Python Celery (helpers/db-results-suite.ts).
import { dbResultsSuite } from './helpers/db-results-suite.js'

await dbResultsSuite('mysql')
