// Shared OpenTelemetry setup for the real-client scripts: the real JS SDK
// (NodeTracerProvider, BatchSpanProcessor, the OTLP/HTTP protobuf exporter)
// sending to tally, and a root span around the one LLM call.
//
// Environment (set by realclients_test.go):
//   TALLY_OTLP_URL  tally's base URL; spans go to $TALLY_OTLP_URL/v1/traces
//   MOCK_LLM_URL    the mock LLM server's base URL (no /v1)
//
// The script prints one JSON line on stdout: {"trace_id": ..., "spans": N}.
// On stderr it prints every span it exported (scope, name, attributes) as
// JSON lines prefixed "span ", which the Go test shows when it fails or when
// REALCLIENTS_DEBUG=1.
import { diag, DiagConsoleLogger, DiagLogLevel, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

/** Returns the value of the environment variable name, or exits. */
export function env(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return v;
}

/** Records what was exported, for the stderr dump. */
class DumpProcessor {
  constructor() {
    this.spans = [];
  }
  onStart() {}
  onEnd(span) {
    const scope = span.instrumentationScope ?? span.instrumentationLibrary ?? {};
    this.spans.push({
      scope: scope.name,
      scope_version: scope.version,
      name: span.name,
      attributes: span.attributes,
    });
  }
  forceFlush() {
    return Promise.resolve();
  }
  shutdown() {
    return Promise.resolve();
  }
}

/**
 * Registers a global tracer provider exporting to tally, runs fn inside a
 * root span named "realclient <client>", flushes and shuts the provider
 * down, and prints the trace id. fn receives the provider (for
 * instrumentations that take one).
 */
export async function runTraced(client, fn) {
  diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.WARN);
  const exporter = new OTLPTraceExporter({ url: env("TALLY_OTLP_URL") + "/v1/traces" });
  const dump = new DumpProcessor();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": "realclients-" + client }),
    spanProcessors: [new BatchSpanProcessor(exporter), dump],
  });
  provider.register();
  const tracer = trace.getTracer("tally-realclients");
  let traceId;
  await tracer.startActiveSpan("realclient " + client, async (root) => {
    traceId = root.spanContext().traceId;
    try {
      await fn(provider);
    } finally {
      root.end();
    }
  });
  await provider.forceFlush();
  await provider.shutdown();
  for (const s of dump.spans) {
    console.error("span " + JSON.stringify(s));
  }
  console.log(JSON.stringify({ trace_id: traceId, spans: dump.spans.length }));
}
