package ingest

import "testing"

// TestSharedScopeNames checks that a scope name two projects use is read by
// the project the span's version scheme says: OpenLLMetry always sends a
// plain release version ("0.47.5"), the OpenTelemetry python-contrib GenAI
// instrumentations a PEP 440 pre-release ("2.0b0.dev") or none.
func TestSharedScopeNames(t *testing.T) {
	custom := UsagePolicy{Readings: map[string]bool{"otel-genai": true}}
	cases := []struct {
		name           string
		policy         UsagePolicy
		scope, version string
		provider       string
		wantName       string
		wantExclusive  bool
	}{
		// opentelemetry.instrumentation.anthropic: OpenLLMetry, and contrib's
		// anthropic package (its version.py says 2.0b0.dev).
		{"openllmetry anthropic 0.47.5", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "0.47.5", "anthropic", "openllmetry-anthropic", false},
		{"openllmetry anthropic 0.32.1", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "0.32.1", "anthropic", "openllmetry-anthropic-legacy", true},
		{"contrib anthropic 2.0b0.dev", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "2.0b0.dev", "anthropic", "otel-genai-contrib", false},
		// A 0.x pre-release sorts below 0.33.4 but is no OpenLLMetry release:
		// it must not land on OpenLLMetry's legacy (exclusive) reading.
		{"pre-release 0.2b0 is not OpenLLMetry legacy", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "0.2b0", "anthropic", "otel-genai-contrib", false},
		{"pre-release 0.33.4rc1 is not OpenLLMetry", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "0.33.4rc1", "anthropic", "otel-genai-contrib", false},
		{"anthropic scope without version", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "", "anthropic", ProviderDefault, true},
		// opentelemetry.instrumentation.langchain: OpenLLMetry, and contrib's
		// langchain 60a670f0–e381a367 (2.0b0.dev).
		{"openllmetry langchain", UsagePolicy{}, "opentelemetry.instrumentation.langchain", "0.47.5", "anthropic", "openllmetry", false},
		{"contrib langchain 2.0b0.dev", UsagePolicy{}, "opentelemetry.instrumentation.langchain", "2.0b0.dev", "anthropic", "otel-genai-contrib", false},
		// opentelemetry.instrumentation.openai*: OpenLLMetry's openai is
		// …openai.v0/.v1; contrib's openai-v2 is …openai_v2, no OpenLLMetry.
		{"openllmetry openai v1", UsagePolicy{}, "opentelemetry.instrumentation.openai.v1", "0.47.5", "openai", "openllmetry", false},
		{"contrib openai_v2 is not OpenLLMetry", UsagePolicy{}, "opentelemetry.instrumentation.openai_v2", "2.3b0", "openai", "otel-genai", false},
		{"configured otel-genai reaches openai_v2", custom, "opentelemetry.instrumentation.openai_v2", "2.3b0", "openai", "otel-genai", true},
		// opentelemetry.instrumentation.openai_agents: OpenLLMetry, and
		// contrib's openai-agents-v2 (get_tracer(__name__, "")).
		{"openllmetry openai_agents", UsagePolicy{}, "opentelemetry.instrumentation.openai_agents", "0.47.5", "openai", "openllmetry", false},
		{"contrib openai_agents, no version", UsagePolicy{}, "opentelemetry.instrumentation.openai_agents", "", "openai", "otel-genai", false},
		// opentelemetry.instrumentation.vertexai: OpenLLMetry, and contrib's
		// vertexai (get_tracer(__name__, "")).
		{"openllmetry vertexai", UsagePolicy{}, "opentelemetry.instrumentation.vertexai", "0.47.5", "gcp.vertex_ai", "openllmetry", false},
		{"contrib vertexai, no version", UsagePolicy{}, "opentelemetry.instrumentation.vertexai", "", "gcp.vertex_ai", "otel-genai", false},
		{"contrib vertexai pre-release", UsagePolicy{}, "opentelemetry.instrumentation.vertexai", "2.0b0", "gcp.vertex_ai", "otel-genai", false},
		// Scopes only one project uses stay as they were.
		{"openllmetry bedrock", UsagePolicy{}, "opentelemetry.instrumentation.bedrock", "0.47.5", "aws.bedrock", "openllmetry-bedrock", true},
		{"openllmetry crewai", UsagePolicy{}, "opentelemetry.instrumentation.crewai.instrumentation", "0.36.0", "openai", "openllmetry", false},
		{"contrib google_genai", UsagePolicy{}, "opentelemetry.instrumentation.google_genai", "0.7b1", "gcp.gemini", "otel-genai", false},
		{"util-genai handler", UsagePolicy{}, "opentelemetry.util.genai.handler", "0.4b0", "anthropic", "otel-genai", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.policy.resolve(tc.policy.table(), spanIdentity{scope: tc.scope, version: tc.version, provider: tc.provider})
			if a.name != tc.wantName || a.exclusive != tc.wantExclusive {
				t.Errorf("resolve(%q %q, %q) = %s exclusive %v (%s), want %s exclusive %v",
					tc.scope, tc.version, tc.provider, a.name, a.exclusive, a.why, tc.wantName, tc.wantExclusive)
			}
		})
	}
}

func TestVersionSchemes(t *testing.T) {
	cases := []struct {
		in           string
		release, pre bool
	}{
		{"0.47.5", true, false},
		{"v1.2.0", true, false},
		{"2.0b0.dev", false, true},
		{"0.2b0", false, true},
		{"1.1b1", false, true},
		{"0.33.4rc1", false, true},
		{"0.61b0.dev0", false, true},
		{"1.0.0-beta.2", false, true},
		{"0.2.0.dev", false, true},
		{"", false, false},
		{"dev", false, false},
		{"1.0.post1", false, false},
	}
	for _, tc := range cases {
		if got := isReleaseVersion(tc.in); got != tc.release {
			t.Errorf("isReleaseVersion(%q) = %v, want %v", tc.in, got, tc.release)
		}
		if got := isPreReleaseVersion(tc.in); got != tc.pre {
			t.Errorf("isPreReleaseVersion(%q) = %v, want %v", tc.in, got, tc.pre)
		}
	}
}

func TestMatchVersionPreRelease(t *testing.T) {
	cases := []struct {
		version, min, below string
		want                bool
	}{
		{"0.33.4", "0.33.4", "", true},
		{"0.33.4rc1", "0.33.4", "", false}, // a pre-release sorts before its release
		{"0.33.4rc1", "0.1", "0.33.4", true},
		{"0.33.5b0", "0.33.4", "", true},
		{"0.1.16", "0.1.12", "0.1.16", false},
		{"0.1.16b1", "0.1.12", "0.1.16", true},
	}
	for _, tc := range cases {
		if got := matchVersion(tc.version, tc.min, tc.below); got != tc.want {
			t.Errorf("matchVersion(%q, %q, %q) = %v, want %v", tc.version, tc.min, tc.below, got, tc.want)
		}
	}
}
