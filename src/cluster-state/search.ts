// Flower's task search syntax (flower/utils/search.py), so a query that works
// in Flower's search box or `/api/tasks?search=` works here: words match as
// substrings of any field, `field:value` narrows to name, state, worker, args,
// kwargs or result (`state:` and `kwargs:key=value` match exactly), AND is
// implied between words, OR and parentheses group. Pure: no I/O.
import { readFlatDictRepr, TsqError } from '../protocol/index.js'

export const SEARCH_FIELDS = new Set(['name', 'state', 'worker', 'args', 'kwargs', 'result'])
const EXACT_FIELDS = new Set(['state'])
const MIN_SUBSTRING_LENGTH = 3
const MAX_QUERY_LENGTH = 2048
const MAX_QUERY_TOKENS = 128
const MAX_QUERY_DEPTH = 5

export class QuerySyntaxError extends TsqError {
  constructor(message: string, position?: number) {
    super('QUERY_SYNTAX', `${position === undefined ? message : `${message} at position ${position}`}.`)
  }
}

export type Query =
  | { kind: 'all' }
  | { kind: 'term'; field: string | null; value: string }
  | { kind: 'and'; children: Query[] }
  | { kind: 'or'; children: Query[] }

interface Token {
  kind: 'LPAREN' | 'RPAREN' | 'AND' | 'OR' | 'TERM' | 'EOF'
  value: string
  position: number
}

const isSpace = (c: string): boolean => /\s/.test(c)

function tokenize(raw: string): Token[] {
  const tokens: Token[] = []
  const push = (t: Token): void => {
    tokens.push(t)
    if (tokens.length > MAX_QUERY_TOKENS) throw new QuerySyntaxError(`Query exceeds ${MAX_QUERY_TOKENS} tokens`)
  }
  let i = 0
  while (i < raw.length) {
    const c = raw[i]!
    if (isSpace(c)) {
      i += 1
      continue
    }
    const position = i
    if (c === '(' || c === ')') {
      push({ kind: c === '(' ? 'LPAREN' : 'RPAREN', value: c, position })
      i += 1
      continue
    }
    let value = ''
    let quoted = false
    let inQuote = false
    while (i < raw.length) {
      const ch = raw[i]!
      if (ch === '\\' && i + 1 < raw.length && (raw[i + 1] === '"' || raw[i + 1] === '\\')) {
        value += raw[i + 1]
        i += 2
        continue
      }
      if (ch === '"') {
        quoted = true
        inQuote = !inQuote
        i += 1
        continue
      }
      if (!inQuote && (isSpace(ch) || ch === '(' || ch === ')')) break
      value += ch
      i += 1
    }
    if (inQuote) throw new QuerySyntaxError('Unterminated quoted phrase', position)
    if (!value) throw new QuerySyntaxError('Empty search term', position)
    if (!quoted && (value === 'AND' || value === 'OR')) push({ kind: value, value, position })
    else if (!quoted && value === 'NOT') throw new QuerySyntaxError('NOT is not supported', position)
    else push({ kind: 'TERM', value, position })
  }
  tokens.push({ kind: 'EOF', value: '', position: raw.length })
  return tokens
}

function combine(kind: 'and' | 'or', children: Query[]): Query {
  const flat: Query[] = []
  const seen = new Set<string>()
  for (const child of children) {
    for (const c of child.kind === kind ? child.children : [child]) {
      const key = JSON.stringify(c)
      if (!seen.has(key)) {
        seen.add(key)
        flat.push(c)
      }
    }
  }
  return flat.length === 1 ? flat[0]! : { kind, children: flat }
}

function parseTerm(token: Token): Query {
  let field: string | null = null
  let value = token.value
  const colon = value.indexOf(':')
  if (colon !== -1) {
    const candidate = value.slice(0, colon).toLowerCase()
    if (SEARCH_FIELDS.has(candidate)) {
      field = candidate
      value = value.slice(colon + 1)
    }
  }
  if (field === null && value.startsWith('-')) throw new QuerySyntaxError("Negation with '-' is not supported", token.position)
  if (!value) throw new QuerySyntaxError('Search qualifier requires a value', token.position)
  const exact = (field !== null && EXACT_FIELDS.has(field)) || (field === 'kwargs' && value.includes('='))
  if (!exact && value.trim().length < MIN_SUBSTRING_LENGTH)
    throw new QuerySyntaxError(`Substring search terms must contain at least ${MIN_SUBSTRING_LENGTH} characters`, token.position)
  return { kind: 'term', field, value }
}

class Parser {
  private index = 0
  constructor(private readonly tokens: Token[]) {}

  private get current(): Token {
    return this.tokens[this.index]!
  }

  /** A call, so TypeScript does not narrow the kind across a move of the index. */
  private kind(): Token['kind'] {
    return this.tokens[this.index]!.kind
  }

  parse(): Query {
    if (this.current.kind === 'EOF') return { kind: 'all' }
    const expression = this.parseOr(0)
    if (this.kind() !== 'EOF') throw new QuerySyntaxError(`Unexpected '${this.current.value}'`, this.current.position)
    return expression
  }

  private parseOr(depth: number): Query {
    const children = [this.parseAnd(depth)]
    while (this.current.kind === 'OR') {
      const operator = this.tokens[this.index++]!
      if (['EOF', 'RPAREN', 'AND', 'OR'].includes(this.current.kind))
        throw new QuerySyntaxError('OR must be followed by a search term', operator.position)
      children.push(this.parseAnd(depth))
    }
    return combine('or', children)
  }

  private parseAnd(depth: number): Query {
    const children = [this.parsePrimary(depth)]
    while (!['EOF', 'RPAREN', 'OR'].includes(this.current.kind)) {
      if (this.current.kind === 'AND') {
        const operator = this.tokens[this.index++]!
        if (['EOF', 'RPAREN', 'AND', 'OR'].includes(this.current.kind))
          throw new QuerySyntaxError('AND must be followed by a search term', operator.position)
      }
      children.push(this.parsePrimary(depth))
    }
    return combine('and', children)
  }

  private parsePrimary(depth: number): Query {
    const token = this.current
    if (token.kind === 'LPAREN') {
      if (depth >= MAX_QUERY_DEPTH) throw new QuerySyntaxError(`Query nesting exceeds ${MAX_QUERY_DEPTH} levels`, token.position)
      this.index += 1
      if (this.current.kind === 'RPAREN') throw new QuerySyntaxError('Empty group', token.position)
      const expression = this.parseOr(depth + 1)
      if (this.kind() !== 'RPAREN') throw new QuerySyntaxError('Missing closing parenthesis', token.position)
      this.index += 1
      return expression
    }
    if (token.kind !== 'TERM') throw new QuerySyntaxError('Expected a search term', token.position)
    this.index += 1
    return parseTerm(token)
  }
}

export function parseQuery(raw: string | null | undefined): Query {
  const query = (raw ?? '').trim()
  if (query.length > MAX_QUERY_LENGTH) throw new QuerySyntaxError(`Query exceeds ${MAX_QUERY_LENGTH} characters`)
  return new Parser(tokenize(query)).parse()
}

/** What a task offers to the search, each field case-folded (Flower's SearchDocument). */
export interface SearchDocument {
  name: string
  state: string
  worker: string
  args: string
  kwargs: string
  result: string
  /** uuid, name, state, worker, args, kwargs, result joined by NUL. */
  all: string
  /** The kwargs as the event carried them, read into pairs on the first `kwargs:key=value`. */
  kwargsRaw: unknown
  /** `key=value` of the kwargs, for `kwargs:key=value`; null until a query needs them. */
  kwargsPairs: Set<string> | null
}

export const fold = (value: unknown): string => (value === null || value === undefined ? '' : String(value).toLowerCase())

/**
 * `key=value` of a task's kwargs, case-folded, as Flower's `kwargs:key=value`
 * compares them: the event carries Python's repr (`{'x': 1}`), read by
 * protocol/'s flat-dict reader; anything nested is left to substring search.
 */
export function kwargsPairs(kwargs: unknown): Set<string> {
  return new Set((readFlatDictRepr(kwargs) ?? []).map(([key, value]) => `${fold(key)}=${fold(value)}`))
}

/**
 * The query as one predicate, its terms case-folded once: a search tests
 * every held task, and folding the term for each of 100,000 showed.
 */
export function compileQuery(query: Query): (doc: SearchDocument) => boolean {
  switch (query.kind) {
    case 'all':
      return () => true
    case 'and': {
      const parts = query.children.map(compileQuery)
      return (doc) => parts.every((p) => p(doc))
    }
    case 'or': {
      const parts = query.children.map(compileQuery)
      return (doc) => parts.some((p) => p(doc))
    }
    case 'term': {
      const value = fold(query.value)
      if (query.field === 'state') return (doc) => doc.state === value
      if (query.field === 'kwargs' && value.includes('=')) {
        const at = value.indexOf('=')
        const pair = `${value.slice(0, at).trim()}=${value.slice(at + 1).trim()}`
        return (doc) => (doc.kwargsPairs ??= kwargsPairs(doc.kwargsRaw)).has(pair)
      }
      const field = query.field as 'name' | 'worker' | 'args' | 'kwargs' | 'result' | null
      return field === null ? (doc) => doc.all.includes(value) : (doc) => doc[field].includes(value)
    }
  }
}

/**
 * A test of many tasks at once, given `contains(term)`, which says whether a
 * term may be in any of their documents' `all` texts (false only when it
 * surely is not): false only when no document can match. Every substring
 * term a matching document has is in its `all`; a `kwargs:key=value` term
 * says nothing (its pairs are not in the text), nor does an OR with such a
 * term. Null when nothing could be ruled out.
 */
export type Prefilter = (contains: (term: string) => boolean) => boolean

export function compilePrefilter(query: Query): Prefilter | null {
  switch (query.kind) {
    case 'all':
      return null
    case 'and': {
      const parts = query.children.map(compilePrefilter).filter((p): p is Prefilter => p !== null)
      if (parts.length === 0) return null
      return parts.length === 1 ? parts[0]! : (contains) => parts.every((p) => p(contains))
    }
    case 'or': {
      const parts = query.children.map(compilePrefilter)
      if (parts.some((p) => p === null)) return null
      return (contains) => parts.some((p) => p!(contains))
    }
    case 'term': {
      const value = fold(query.value)
      if (query.field === 'kwargs' && value.includes('=')) return null
      return (contains) => contains(value)
    }
  }
}

/** Does the document match the query? Terms are matched as Flower's _term_ids does. */
export function matches(query: Query, doc: SearchDocument): boolean {
  return compileQuery(query)(doc)
}
