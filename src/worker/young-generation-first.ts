// Imported first by a pool slot's entry (slot-main), for its side effect:
// ES modules run in import order, so the flag is set before the rest of the
// slot's code and the user's module load. Loading them grew a prefork child's
// young generation to 8 MB of semi-spaces (7.5 MB resident) before any task
// ran, and V8 does not give that back at rest.
import { keepYoungGenerationSmall } from './memory-footprint.js'

keepYoungGenerationSmall()
