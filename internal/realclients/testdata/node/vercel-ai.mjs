// One LLM call through the Vercel AI SDK with experimental_telemetry on.
//
// Usage: node vercel-ai.mjs <major> <provider> <mode>
//   major:    6 (package "ai" with @ai-sdk/anthropic 3, @ai-sdk/openai 3) or
//             5 (aliases "ai5", "ai-sdk-anthropic2", "ai-sdk-openai2")
//   provider: anthropic | openai (the Responses API, the provider's default) |
//             openai-chat (Chat Completions)
//   mode:     generate (generateText) | stream (streamText)
import { env, runTraced } from "./otel.mjs";

const [major, providerName, mode] = process.argv.slice(2);
const packages = {
  6: { ai: "ai", anthropic: "@ai-sdk/anthropic", openai: "@ai-sdk/openai" },
  5: { ai: "ai5", anthropic: "ai-sdk-anthropic2", openai: "ai-sdk-openai2" },
}[major];
if (!packages) {
  console.error(`unknown major ${major}`);
  process.exit(2);
}
const { generateText, streamText } = await import(packages.ai);
const base = env("MOCK_LLM_URL") + "/v1";

let model;
switch (providerName) {
  case "anthropic": {
    const { createAnthropic } = await import(packages.anthropic);
    model = createAnthropic({ baseURL: base, apiKey: "test-key" })("claude-sonnet-4-5");
    break;
  }
  case "openai":
  case "openai-chat": {
    const { createOpenAI } = await import(packages.openai);
    const openai = createOpenAI({ baseURL: base, apiKey: "test-key" });
    model = providerName === "openai" ? openai("gpt-4o") : openai.chat("gpt-4o");
    break;
  }
  default:
    console.error(`unknown provider ${providerName}`);
    process.exit(2);
}

await runTraced(`vercel-ai${major}-${providerName}-${mode}`, async () => {
  const args = {
    model,
    prompt: "Say hello.",
    maxRetries: 0,
    experimental_telemetry: { isEnabled: true, functionId: "realclients" },
  };
  if (mode === "generate") {
    const r = await generateText(args);
    console.error("text: " + r.text);
    console.error("sdk usage: " + JSON.stringify(r.usage));
  } else if (mode === "stream") {
    let streamError;
    const r = streamText({ ...args, onError: ({ error }) => (streamError = error) });
    let text = "";
    for await (const delta of r.textStream) text += delta;
    const usage = await r.usage;
    if (streamError) throw streamError;
    console.error("text: " + text);
    console.error("sdk usage: " + JSON.stringify(usage));
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
});
