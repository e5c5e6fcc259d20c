package pricing

import "testing"

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"Claude-Sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"  GPT-4o  ", "gpt-4o"},
		{"openai/gpt-4o", "gpt-4o"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"anthropic/claude-3-7-sonnet-latest", "claude-3-7-sonnet"},
		{"anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"},
		{"anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet"},
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"},
		{"eu.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"},
		{"apac.anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet"},
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"},
		{"anthropic.claude-3-haiku-20240307-v1:0:200k", "claude-3-haiku"},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"},
		{"meta.llama3-70b-instruct-v1:0", "llama3-70b-instruct"},
		{"openai.gpt-oss-120b-1:0", "gpt-oss-120b"},
		{"claude-3-5-sonnet@20240620", "claude-3-5-sonnet"},
		{"claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet-v2"},
		{"projects/p/locations/us-east5/publishers/anthropic/models/claude-opus-4-1@20250805", "claude-opus-4-1"},
		{"models/gemini-2.5-pro", "gemini-2-5-pro"},
		{"gemini-2.0-flash-001", "gemini-2-0-flash-001"},
		{"claude-3.5-sonnet", "claude-3-5-sonnet"},
		{"claude-3-5-sonnet", "claude-3-5-sonnet"},
		{"gpt-4.1", "gpt-4-1"},
		{"gpt-4-1", "gpt-4-1"},
		{"mistral-large-latest", "mistral-large"},
		{"mistral-large-2411", "mistral-large-2411"}, // snapshot kept: lookup matches it by prefix
		{"llama3.3:70b", "llama3-3:70b"},             // an Ollama size tag is not a version pin
		{"us.my-deployment", "us.my-deployment"},     // a region prefix alone is kept
		{"", ""},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeProvider(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"anthropic", "anthropic"},
		{"bedrock", "aws.bedrock"},
		{"bedrock_converse", "aws.bedrock"},
		{"vertex_ai-anthropic_models", "gcp.vertex_ai"},
		{"gemini", "gcp.gemini"},
		{"mistral", "mistral_ai"},
		{"xai", "x_ai"},
		{"azure", "azure.ai.openai"},
		{"Together_AI", "together_ai"},
	}
	for _, tt := range tests {
		if got := normalizeProvider(tt.in); got != tt.want {
			t.Errorf("normalizeProvider(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSnapshot(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		dated    bool
	}{
		{"gpt-4o-2024-05-13", "gpt-4o-20240513", true},
		{"openai/GPT-4o-20240513", "gpt-4o-20240513", true},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929", true},
		{"us.anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet-20240620", true},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5-20250929", true},
		{"claude-3.5-sonnet-20240620", "claude-3-5-sonnet-20240620", true},
		{"gpt-4o", "", false},
		{"gpt-4o-latest", "", false},
		{"gemini-2.5-flash-preview-04-17", "", false},
		{"gpt-3.5-turbo-1106", "", false},
	} {
		got, dated := Snapshot(tt.in)
		if got != tt.want || dated != tt.dated {
			t.Errorf("Snapshot(%q) = %q, %v; want %q, %v", tt.in, got, dated, tt.want, tt.dated)
		}
	}
}
