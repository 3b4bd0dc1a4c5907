// Imported first by a pool slot's entry (slot-main), for its side effect: ES
// modules run in import order, so the young generation is held small before
// the rest of the slot's code and the user's module load and grow it.
import { keepYoungGenerationSmall } from './tricks/young-generation.js'

keepYoungGenerationSmall()
