// Package realclients tests tally against real Node LLM clients: the Vercel
// AI SDK, OpenLLMetry-JS and OpenInference with the Anthropic and OpenAI
// SDKs, calling a local mock LLM and exporting their spans with the
// OpenTelemetry JS SDK to an in-process tally, whose tokens and cost must
// equal the hand-computed bill. The Node packages are in testdata/node,
// installed by scripts/test-deps.sh.
package realclients
