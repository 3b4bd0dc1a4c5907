"""The real OpenTelemetry SDK and Celery instrumentation for the interop check,
from the source snapshots on PYTHONPATH (run.mjs sets it): a TracerProvider whose
exporter appends each span to OTEL_SPANS_FILE as the JSON line tsq's side writes."""
import json
import os

from opentelemetry import trace
from opentelemetry.instrumentation.celery import CeleryInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class FileExporter(SpanExporter):
    def __init__(self, path):
        self.path = path

    def export(self, spans):
        with open(self.path, 'a') as f:
            for s in spans:
                parent = s.parent
                f.write(
                    json.dumps(
                        {
                            'side': 'py',
                            'name': s.name,
                            'kind': s.kind.value,
                            'traceId': format(s.context.trace_id, '032x'),
                            'spanId': format(s.context.span_id, '016x'),
                            'parentSpanId': format(parent.span_id, '016x') if parent else None,
                            'attributes': {k: (list(v) if isinstance(v, tuple) else v) for k, v in (s.attributes or {}).items()},
                            'links': [
                                {'traceId': format(l.context.trace_id, '032x'), 'spanId': format(l.context.span_id, '016x')}
                                for l in s.links
                            ],
                            'status': {'code': s.status.status_code.value},
                            'pid': os.getpid(),
                        },
                        default=str,
                    )
                    + '\n'
                )
        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass


def setup():
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(os.environ['OTEL_SPANS_FILE'])))
    trace.set_tracer_provider(provider)
    CeleryInstrumentor().instrument(skip_dep_check=True, use_span_links=bool(os.environ.get('OTEL_SPAN_LINKS')))
    return trace.get_tracer('interop')
