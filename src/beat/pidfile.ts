// beat's pidfile: the shared rules, where a live pid counts as taken only when
// it is a tsq beat.
import { acquirePidfile } from '../process/index.js'

export function acquireBeatPidfile(path: string, warn: (m: string) => void): () => void {
  return acquirePidfile(path, warn, 'beat')
}
