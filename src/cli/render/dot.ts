// Graphviz dot text as Celery writes it (celery/utils/graph.py: GraphFormatter
// and DependencyGraph.to_dot): the same schemes and colours, attributes in the
// same order, nodes in insertion order with a node's line before its edges,
// and a node with no edges drawn as a terminal one.

export type DotAttrs = Record<string, string | number>

const SCHEME: DotAttrs = { shape: 'box', arrowhead: 'vee', style: 'filled', fontname: 'HelveticaNeue' }
export const EDGE_SCHEME: DotAttrs = { color: 'darkseagreen4', arrowcolor: 'black', arrowsize: 0.7 }
export const NODE_SCHEME: DotAttrs = { fillcolor: 'palegreen3', color: 'palegreen4' }
export const TERM_SCHEME: DotAttrs = { fillcolor: 'palegreen1', color: 'palegreen2' }
const GRAPH_SCHEME: DotAttrs = { bgcolor: 'mintcream' }

export interface DotNode {
  /** What the node is called in the graph (its label unless attrs say otherwise). */
  id: string
  /** Drawn when the node has edges (Celery's `node`). */
  attrs?: DotAttrs
  /** The colours under attrs: Celery's node scheme when the node has edges, its terminal scheme when not; {} for none. */
  scheme?: DotAttrs
  edges: Array<{ to: string; attrs?: DotAttrs }>
}

/** Python's str() of a number as Celery's attrs print it (0.7, 10). */
function value(v: string | number): string {
  return `"${String(v).replace(/"/g, '\\"')}"`
}

function attrs(...layers: DotAttrs[]): string {
  // Object spread keeps the first position of a key and the last value, as Python's dict(a, **b) does.
  const merged = Object.assign({}, ...layers) as DotAttrs
  return Object.entries(merged)
    .map(([k, v]) => `${k}=${value(v)}`)
    .join(', ')
}

const quote = (id: string) => `"${id.replace(/"/g, '\\"')}"`

export function toDot(nodes: readonly DotNode[], graphAttrs: DotAttrs = {}): string {
  const lines = ['digraph dependencies {', `    graph [${attrs(SCHEME, GRAPH_SCHEME, graphAttrs)}]`]
  const seen = new Set<string>()
  for (const node of nodes) {
    if (node.edges.length === 0) {
      if (!seen.has(node.id)) lines.push(`    ${quote(node.id)} [${attrs(SCHEME, node.scheme ?? TERM_SCHEME, node.attrs ?? {})}]`)
      seen.add(node.id)
    }
    for (const edge of node.edges) {
      if (!seen.has(node.id)) lines.push(`    ${quote(node.id)} [${attrs(SCHEME, node.scheme ?? NODE_SCHEME, node.attrs ?? {})}]`)
      seen.add(node.id)
      lines.push(`    ${quote(node.id)} -> ${quote(edge.to)} [${attrs(SCHEME, EDGE_SCHEME, edge.attrs ?? {})}]`)
    }
  }
  lines.push('}')
  return `${lines.join('\n')}\n`
}
