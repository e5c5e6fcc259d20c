package pricing

import (
	"regexp"
	"strings"
)

// bedrockRegionPrefixes are the cross-region inference profile prefixes of
// Amazon Bedrock model ids (us.anthropic.claude-…). They are removed only when
// a vendor prefix follows.
var bedrockRegionPrefixes = []string{"us-gov.", "us.", "eu.", "apac.", "global.", "jp.", "au.", "ca."}

// bedrockVendorPrefixes are the vendor prefixes of Amazon Bedrock model ids
// (anthropic.claude-…, meta.llama3-…).
var bedrockVendorPrefixes = []string{
	"anthropic.", "meta.", "amazon.", "mistral.", "cohere.", "ai21.", "deepseek.",
	"openai.", "qwen.", "writer.", "google.", "moonshot.",
}

// Suffixes that pin a version of a model without changing its price.
var (
	// Bedrock version pins: -v1:0, -v2:0, -1:0, :0, -v1:0:200k.
	bedrockPinSuffix = regexp.MustCompile(`(-v?[0-9]+)?:[0-9]+(:[0-9a-z]+)?$`)
	// Release dates: -20250929, -2024-08-06.
	dateSuffix = regexp.MustCompile(`-20[0-9]{2}-?[0-9]{2}-?[0-9]{2}$`)
)

// Normalize returns the form of a model name that matching compares, so that
// the spellings providers, SDKs and gateways use for one model compare equal:
//
//   - lowercase, surrounding space trimmed;
//   - everything up to the last "/" removed (openai/gpt-4o, models/gemini-2.5-pro,
//     openrouter/anthropic/claude-…, Vertex resource names);
//   - a Vertex version after "@" removed (claude-sonnet-4-5@20250929);
//   - Bedrock region and vendor prefixes removed (us.anthropic.claude-…);
//   - version pins removed from the end, repeatedly: Bedrock's -v1:0 and :0,
//     dates (-20250929, -2024-08-06) and -latest / :latest;
//   - a dot between two digits becomes a dash, so claude-3.5-sonnet and
//     claude-3-5-sonnet compare equal (gpt-4.1 becomes gpt-4-1; no model is
//     published under both spellings with different meanings).
//
// Catalog names go through the same function, so matching compares like with
// like. Snapshot suffixes such as -0613, -001 or -2411 are kept: lookup
// handles them by prefix matching.
func Normalize(model string) string {
	return dotsBetweenDigitsToDashes(stripPins(bareName(model, false), true))
}

// bareName is model lowercased and trimmed, without what comes before its
// last "/" or its Bedrock region and vendor prefixes; a Vertex version
// after "@" is dropped, or with keepVertex kept as a "-" suffix (the date
// Snapshot reads).
func bareName(model string, keepVertex bool) string {
	s := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.IndexByte(s, '@'); i >= 0 {
		if keepVertex {
			s = s[:i] + "-" + s[i+1:]
		} else {
			s = s[:i]
		}
	}
	return stripBedrockPrefixes(s)
}

// stripPins removes version pins from the end of s, repeatedly; release
// dates among them only when dates is set.
func stripPins(s string, dates bool) string {
	for {
		t := stripVersionSuffix(s, dates)
		if t == s {
			return s
		}
		s = t
	}
}

// stripBedrockPrefixes removes a Bedrock region prefix followed by a vendor
// prefix, or a vendor prefix alone.
func stripBedrockPrefixes(s string) string {
	for _, region := range bedrockRegionPrefixes {
		if rest, ok := strings.CutPrefix(s, region); ok && hasVendorPrefix(rest) {
			s = rest
			break
		}
	}
	for _, vendor := range bedrockVendorPrefixes {
		if rest, ok := strings.CutPrefix(s, vendor); ok && rest != "" {
			return rest
		}
	}
	return s
}

func hasVendorPrefix(s string) bool {
	for _, vendor := range bedrockVendorPrefixes {
		if strings.HasPrefix(s, vendor) {
			return true
		}
	}
	return false
}

// stripVersionSuffix removes one version pin from the end of s, if any
// (a release date only when dates is set).
func stripVersionSuffix(s string, dates bool) string {
	for _, suffix := range []string{"-latest", ":latest"} {
		if rest, ok := strings.CutSuffix(s, suffix); ok && rest != "" {
			return rest
		}
	}
	if loc := bedrockPinSuffix.FindStringIndex(s); loc != nil && loc[0] > 0 {
		return s[:loc[0]]
	}
	if loc := dateSuffix.FindStringIndex(s); dates && loc != nil && loc[0] > 0 {
		return s[:loc[0]]
	}
	return s
}

// Snapshot returns the form of a dated model name that snapshot entries
// are matched by — Normalize's, but with the release date kept, written
// as eight digits (gpt-4o-2024-05-13 → gpt-4o-20240513,
// us.anthropic.claude-3-5-sonnet-20240620-v1:0 → claude-3-5-sonnet-20240620)
// — and whether the name carries a date at all.
func Snapshot(model string) (string, bool) {
	s := stripPins(bareName(model, true), false)
	loc := dateSuffix.FindStringIndex(s)
	if loc == nil || loc[0] == 0 {
		return "", false
	}
	date := strings.ReplaceAll(s[loc[0]+1:], "-", "")
	return dotsBetweenDigitsToDashes(s[:loc[0]]) + "-" + date, true
}

func dotsBetweenDigitsToDashes(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	b := []byte(s)
	for i := 1; i+1 < len(b); i++ {
		if b[i] == '.' && isDigit(b[i-1]) && isDigit(b[i+1]) {
			b[i] = '-'
		}
	}
	return string(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// continuesVersion reports whether rest — what follows a catalog name and a
// "-" in a normalized model name — continues that name's version number
// rather than naming a variant or snapshot of it. A first segment of one or
// two digits is a version component (claude-opus-4 + "1" is claude-opus-4-1, a
// different model); longer digit runs are snapshot pins (gpt-4-0613,
// gemini-2-0-flash-001, mistral-large-2411) and words are variants
// (gemini-3-pro-preview).
func continuesVersion(rest string) bool {
	seg := rest
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		seg = rest[:i]
	}
	if seg == "" || len(seg) > 2 {
		return false
	}
	for i := 0; i < len(seg); i++ {
		if !isDigit(seg[i]) {
			return false
		}
	}
	return true
}

// normalizeProvider maps the provider spellings of SDKs, gateways and LiteLLM
// files to gen_ai.provider.name values, so that a provider-specific catalog
// entry is found whichever spelling a span or a price file used.
func normalizeProvider(provider string) string {
	p := strings.ToLower(strings.TrimSpace(provider))
	switch {
	case strings.HasPrefix(p, "vertex_ai"), p == "vertexai", p == "vertex", p == "google-vertex",
		p == "google.vertex":
		return "gcp.vertex_ai"
	case strings.HasPrefix(p, "bedrock"), p == "aws", p == "amazon-bedrock", p == "amazon_bedrock":
		return "aws.bedrock"
	}
	switch p {
	case "text-completion-openai", "openai_like":
		return "openai"
	case "az.ai.openai", "azure_openai", "azure-openai", "azure", "azure_text":
		return "azure.ai.openai"
	case "az.ai.inference", "azure_ai":
		return "azure.ai.inference"
	case "gemini", "google", "google.generative-ai", "google_genai", "google-genai", "gcp.gen_ai":
		return "gcp.gemini"
	case "mistral", "mistralai", "codestral", "text-completion-codestral":
		return "mistral_ai"
	case "xai", "x-ai":
		return "x_ai"
	case "watsonx", "ibm":
		return "ibm.watsonx.ai"
	case "moonshot", "moonshotai":
		return "moonshot_ai"
	case "cohere_chat":
		return "cohere"
	}
	return p
}
