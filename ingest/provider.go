package ingest

import "strings"

// canonicalProvider maps a provider value as SDKs send it (gen_ai.provider.name,
// the older gen_ai.system values, OpenInference's llm.provider/llm.system,
// the Vercel AI SDK's ai.model.provider prefix) to the gen_ai.provider.name
// spelling of the current conventions. known is false when the value is not a
// model provider tally recognizes (a framework such as strands-agents,
// gcp.vertex.agent or langchain, or something new).
func canonicalProvider(raw string) (provider string, known bool) {
	p := strings.ToLower(strings.TrimSpace(raw))
	switch p {
	case "openai", "anthropic", "aws.bedrock", "azure.ai.openai", "azure.ai.inference",
		"gcp.gemini", "gcp.vertex_ai", "gcp.gen_ai", "cohere", "deepseek", "groq",
		"mistral_ai", "perplexity", "x_ai", "ibm.watsonx.ai", "moonshot_ai":
		return p, true
	// Model hosts that serve other vendors' model families: known, so that a
	// llama or mistral model they serve is not re-attributed by model name.
	case "ollama", "openrouter", "together_ai", "fireworks_ai", "huggingface", "vllm",
		"replicate", "cerebras":
		return p, true
	// Older and vendor spellings.
	case "az.ai.openai", "azure_openai", "azure-openai", "azure":
		return "azure.ai.openai", true
	case "az.ai.inference":
		return "azure.ai.inference", true
	case "aws", "bedrock", "amazon-bedrock", "amazon_bedrock":
		return "aws.bedrock", true
	case "gemini", "google", "google.generative-ai", "google_genai", "google-genai":
		return "gcp.gemini", true
	case "vertex_ai", "vertexai", "vertex", "google-vertex", "google.vertex":
		return "gcp.vertex_ai", true
	case "mistralai", "mistral":
		return "mistral_ai", true
	case "xai", "x-ai":
		return "x_ai", true
	case "watsonx", "ibm":
		return "ibm.watsonx.ai", true
	case "moonshot", "moonshotai":
		return "moonshot_ai", true
	case "together", "togetherai":
		return "together_ai", true
	case "fireworks":
		return "fireworks_ai", true
	}
	return p, false
}

// vercelProviderPrefix returns the part of a Vercel AI SDK ai.model.provider
// value before the first dot: "anthropic.messages" → "anthropic".
func vercelProviderPrefix(v string) string {
	if i := strings.IndexByte(v, '.'); i >= 0 {
		return v[:i]
	}
	return v
}

// providerFromModel infers the provider from a model name, for spans whose
// provider attribute is missing or names a framework. It looks at the name
// after the last "/" (openai/gpt-4o) and at every dot-separated segment
// (Bedrock's us.anthropic.claude-…). Model families served by many hosts
// (llama, qwen, …) infer nothing: ok is false.
func providerFromModel(model string) (provider string, ok bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	// A Bedrock ARN (an application or system inference profile, a
	// foundation model) is Bedrock whatever model it names; an application
	// profile's id names none, so only a price file can price it.
	if strings.HasPrefix(m, "arn:aws:bedrock:") || strings.HasPrefix(m, "arn:aws-us-gov:bedrock:") {
		return "aws.bedrock", true
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for m != "" {
		if p, ok := providerFromModelPrefix(m); ok {
			return p, true
		}
		i := strings.IndexByte(m, '.')
		if i < 0 {
			break
		}
		m = m[i+1:]
	}
	return "", false
}

func providerFromModelPrefix(m string) (string, bool) {
	switch {
	case strings.HasPrefix(m, "gpt-"), strings.HasPrefix(m, "chatgpt"),
		familyPrefix(m, "o1"), familyPrefix(m, "o3"), familyPrefix(m, "o4"):
		return "openai", true
	case strings.HasPrefix(m, "claude"):
		return "anthropic", true
	case strings.HasPrefix(m, "gemini"):
		return "gcp.gemini", true
	case strings.HasPrefix(m, "mistral"), strings.HasPrefix(m, "mixtral"), strings.HasPrefix(m, "codestral"):
		return "mistral_ai", true
	case strings.HasPrefix(m, "deepseek"):
		return "deepseek", true
	case strings.HasPrefix(m, "grok"):
		return "x_ai", true
	case strings.HasPrefix(m, "command"):
		return "cohere", true
	}
	return "", false
}

// familyPrefix reports whether m is the model family f alone or followed by a
// dash ("o3", "o3-mini"), so "o1" does not match an unrelated "o1x".
func familyPrefix(m, f string) bool {
	return m == f || (strings.HasPrefix(m, f) && m[len(f)] == '-')
}
