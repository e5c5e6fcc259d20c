// One messages.create call through the Anthropic SDK, instrumented by a real
// instrumentation registered by hand (ESM imports are not hooked).
//
// The SDK itself traces its calls since 0.134.0 (scope
// "com.anthropic.sdk.typescript") whenever a global tracer provider is
// registered; ANTHROPIC_OPEN_TELEMETRY=false in the environment turns that off.
//
// Usage: node anthropic-sdk.mjs <instrumentation> <mode>
//   instrumentation: openllmetry (@traceloop/instrumentation-anthropic, with
//                    @anthropic-ai/sdk 0.x: 0.27.0 patches Anthropic.Completions,
//                    which SDK 1.x removed) |
//                    openinference (@arizeai/openinference-instrumentation-anthropic,
//                    with @anthropic-ai/sdk 1.x) |
//                    none (@anthropic-ai/sdk 1.x alone)
//   mode:            generate (non-streaming) | stream ("stream": true)
import { env, runTraced } from "./otel.mjs";

const [which, mode] = process.argv.slice(2);

let sdk;
let instrumentation;
if (which === "openllmetry") {
  sdk = await import("anthropic-sdk-0");
  const { AnthropicInstrumentation } = await import("@traceloop/instrumentation-anthropic");
  instrumentation = new AnthropicInstrumentation();
} else if (which === "openinference") {
  sdk = await import("@anthropic-ai/sdk");
  const { AnthropicInstrumentation } = await import("@arizeai/openinference-instrumentation-anthropic");
  instrumentation = new AnthropicInstrumentation();
} else if (which === "none") {
  sdk = await import("@anthropic-ai/sdk");
} else {
  console.error(`unknown instrumentation ${which}`);
  process.exit(2);
}

await runTraced(`${which}-anthropic-${mode}`, async (provider) => {
  if (instrumentation) {
    instrumentation.setTracerProvider(provider);
    instrumentation.manuallyInstrument(sdk);
  }
  const client = new sdk.Anthropic({ baseURL: env("MOCK_LLM_URL"), apiKey: "test-key", maxRetries: 0 });
  const params = {
    model: "claude-sonnet-4-5",
    max_tokens: 1024,
    messages: [{ role: "user", content: "Say hello." }],
  };
  if (mode === "generate") {
    const msg = await client.messages.create(params);
    console.error("text: " + msg.content.map((c) => c.text).join(""));
    console.error("sdk usage: " + JSON.stringify(msg.usage));
  } else if (mode === "stream") {
    const stream = await client.messages.create({ ...params, stream: true });
    let text = "";
    for await (const ev of stream) {
      if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") text += ev.delta.text;
    }
    console.error("text: " + text);
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
});
