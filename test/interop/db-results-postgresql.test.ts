// tsq-test: slow 2
// The db+ result backend on postgresql, both ways with Python Celery (helpers/db-results-suite.ts).
import { dbResultsSuite } from './helpers/db-results-suite.js'

await dbResultsSuite('postgresql')
