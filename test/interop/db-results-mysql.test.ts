// tsq-test: slow 2
// The db+ result backend on mysql, both ways with Python Celery (helpers/db-results-suite.ts).
import { dbResultsSuite } from './helpers/db-results-suite.js'

await dbResultsSuite('mysql')
