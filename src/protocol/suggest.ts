// "Did you mean": the names nearest a mistyped one (a command, a remote-control
// method, a flag), by edit distance with a swap of two neighbours counting as
// one edit, as a typing slip makes them. Pure: the CLI, the AMQP shell and the
// fast path all offer them.

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1
  const cols = b.length + 1
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1)
      d[i]![j] = best
    }
  }
  return d[a.length]![b.length]!
}

/**
 * The candidates close enough to `word` to be what was meant, nearest first
 * (at most three): a third of the word's length in edits (at least one), or
 * a candidate the word begins (`stat` for `stats` and `status`).
 */
export function nearestNames(word: string, candidates: Iterable<string>): string[] {
  const lower = word.toLowerCase()
  const allowed = Math.max(1, Math.floor(lower.length / 3))
  const near: Array<{ name: string; distance: number }> = []
  for (const name of new Set(candidates)) {
    if (name === word) continue
    const distance = editDistance(lower, name.toLowerCase())
    if (distance <= allowed || (lower.length >= 3 && name.toLowerCase().startsWith(lower))) near.push({ name, distance })
  }
  near.sort((x, y) => x.distance - y.distance || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
  return near.slice(0, 3).map((n) => n.name)
}

/** ` (did you mean revoke?)`, or '' when nothing is near. */
export function didYouMean(word: string, candidates: Iterable<string>, show: (name: string) => string = (name) => name): string {
  const near = nearestNames(word, candidates)
  if (near.length === 0) return ''
  const shown = near.map(show)
  const listed = shown.length === 1 ? shown[0] : `${shown.slice(0, -1).join(', ')} or ${shown.at(-1)}`
  return ` (did you mean ${listed}?)`
}
