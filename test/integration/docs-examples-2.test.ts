// tsq-test: slow 3
// The code examples of the docs pages in shard 2 of 3 run as written
// (test/helpers/docs-examples-suite.ts says how, and which pages each shard holds). One page:
// `TSQ_DOCS_PAGES=docs/locks.md node --import tsx --test test/integration/docs-examples-*.test.ts`.
import { docsExamplesShard } from '../helpers/docs-examples-suite.js'

docsExamplesShard(1)
