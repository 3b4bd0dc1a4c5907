// The package ships no types; this is the part the dashboard's metrics test reads.
declare module 'parse-prometheus-text-format' {
  export interface MetricFamily {
    name: string
    help: string
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'
    metrics: { labels?: Record<string, string>; value?: string; buckets?: Record<string, string>; count?: string; sum?: string }[]
  }
  export default function parsePrometheusTextFormat(text: string): MetricFamily[]
}
