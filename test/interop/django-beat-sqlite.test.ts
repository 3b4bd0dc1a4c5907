// tsq-test: slow 3
// `tsq beat --scheduler django` on django-celery-beat's tables in sqlite, beside Python's DatabaseScheduler
// (helpers/django-beat-suite.ts says what is checked).
import { djangoBeatSuite } from './helpers/django-beat-suite.js'

await djangoBeatSuite('sqlite')
