package pricing

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/schema"
)

func builtin(t *testing.T) *Catalog {
	t.Helper()
	c, err := Builtin()
	if err != nil {
		t.Fatalf("Builtin: %v", err)
	}
	return c
}

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t, err = time.Parse(time.DateOnly, s)
	}
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestLookupMatching(t *testing.T) {
	c := builtin(t)
	at := date("2025-11-15")
	tests := []struct {
		provider, model string
		wantID          string // "" when nothing may match
	}{
		// dated, prefixed and pinned spellings
		{"anthropic", "claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5"},
		{"openai", "openai/gpt-4o", "openai/gpt-4o"},
		{"openai", "gpt-4o-2024-08-06", "openai/gpt-4o"},
		{"openai", "gpt-4.1-mini-2025-04-14", "openai/gpt-4.1-mini"},
		{"openai", "gpt-5-2025-08-07", "openai/gpt-5"},
		{"openai", "gpt-5-chat-latest", "openai/gpt-5"},
		{"gcp.gemini", "models/gemini-2.5-pro", "gcp.gemini/gemini-2.5-pro"},
		{"gcp.gemini", "gemini-2.0-flash-001", "gcp.gemini/gemini-2.0-flash"},
		{"gcp.gemini", "gemini-2.5-flash-preview-05-20", "gcp.gemini/gemini-2.5-flash"},
		{"gcp.gemini", "gemini-3-pro-preview", "gcp.gemini/gemini-3-pro"},
		{"x_ai", "grok-4-0709", "x_ai/grok-4"},
		{"x_ai", "grok-4-fast-reasoning", "x_ai/grok-4-fast"},
		{"mistral_ai", "mistral-large-2411", "mistral_ai/mistral-large"},
		{"mistral_ai", "codestral-latest", "mistral_ai/codestral"},
		{"groq", "llama-3.3-70b-versatile", "groq/llama-3.3-70b-versatile"},
		{"deepseek", "deepseek-reasoner", "deepseek/deepseek-reasoner"},
		{"openrouter", "anthropic/claude-3.7-sonnet", "anthropic/claude-3-7-sonnet"},
		// snapshots priced unlike their alias have entries of their own,
		// whatever the spelling and provider
		{"openai", "gpt-4o-2024-05-13", "openai/gpt-4o-2024-05-13"},
		{"", "gpt-4o-2024-05-13", "openai/gpt-4o-2024-05-13"},
		{"azure.ai.openai", "openai/gpt-4o-2024-05-13", "openai/gpt-4o-2024-05-13"},
		{"openai", "gpt-4o-20240513", "openai/gpt-4o-2024-05-13"},
		{"openai", "gpt-4o", "openai/gpt-4o"},
		{"openai", "gpt-3.5-turbo-1106", "openai/gpt-3.5-turbo-1106"},
		{"gcp.gemini", "gemini-2.5-flash-preview-04-17", "gcp.gemini/gemini-2.5-flash-preview-04-17"},
		// the longest prefix wins: gpt-4o-mini, not gpt-4o
		{"openai", "gpt-4o-mini-2024-07-18", "openai/gpt-4o-mini"},
		{"openai", "o3-mini-2025-01-31", "openai/o3-mini"},
		// aliases
		{"azure.ai.openai", "gpt-35-turbo", "openai/gpt-3.5-turbo"},
		{"anthropic", "claude-4-sonnet", "anthropic/claude-sonnet-4"},
		// the span's provider decides between equal names
		{"aws.bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0", "aws.bedrock/claude-3-5-sonnet"},
		{"aws.bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0", "aws.bedrock/claude-sonnet-4"},
		{"bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", "aws.bedrock/claude-sonnet-4-5"},
		{"anthropic", "anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic/claude-sonnet-4-5"},
		{"gcp.vertex_ai", "claude-opus-4-1@20250805", "gcp.vertex_ai/claude-opus-4-1"},
		// another or an unknown provider falls back to the first entry in catalog order
		{"langchain", "claude-haiku-4-5", "anthropic/claude-haiku-4-5"},
		{"azure.ai.openai", "gpt-4o", "openai/gpt-4o"},
		{"gcp.vertex_ai", "gemini-2.5-flash-lite", "gcp.gemini/gemini-2.5-flash-lite"},
		// a newer version number is a different model, not a variant
		{"anthropic", "claude-opus-4-6", ""},
		{"openai", "gpt-5.2", ""},
		{"x_ai", "grok-4-1-fast", ""},
		// unknown
		{"openai", "my-finetune-xyz", ""},
		{"openai", "", ""},
	}
	for _, tt := range tests {
		e, p, ok := c.Lookup(tt.provider, tt.model, at)
		if tt.wantID == "" {
			if ok {
				t.Errorf("Lookup(%q, %q) matched %s, want no match", tt.provider, tt.model, e.ID)
			}
			continue
		}
		if !ok || e.ID != tt.wantID {
			t.Errorf("Lookup(%q, %q) = %q (ok %v), want %q", tt.provider, tt.model, e.ID, ok, tt.wantID)
			continue
		}
		if p != e.Price {
			t.Errorf("Lookup(%q, %q): returned price %+v, want the entry's base price %+v", tt.provider, tt.model, p, e.Price)
		}
	}
}

func TestLookupEffectiveDate(t *testing.T) {
	c := builtin(t)
	tests := []struct {
		name, model string
		at          time.Time
		wantVersion string
		wantInput   float64
		wantOutput  float64
	}{
		// o3 was cut from $10/$40 to $2/$8 on 2025-06-10.
		{"o3 before the cut", "o3", date("2025-06-09T23:59:59Z"), "2025-04-16", 10, 40},
		{"o3 on the day of the cut", "o3", date("2025-06-10"), "2025-06-10", 2, 8},
		{"o3 before launch uses the oldest", "o3", date("2025-01-01"), "2025-04-16", 10, 40},
		{"o3 without a time uses the newest", "o3", time.Time{}, "2025-06-10", 2, 8},
		// deepseek-chat: $0.27/$1.10, then $0.56/$1.68 from 2025-09-05 16:00 UTC, then $0.28/$0.42 from 2025-09-29.
		{"deepseek before V3.1", "deepseek-chat", date("2025-09-05T15:59:59Z"), "2025-02-09", 0.27, 1.10},
		{"deepseek V3.1", "deepseek-chat", date("2025-09-05T16:00:00Z"), "2025-09-05", 0.56, 1.68},
		{"deepseek V3.2", "deepseek-chat", date("2025-10-01"), "2025-09-29", 0.28, 0.42},
	}
	for _, tt := range tests {
		e, p, ok := c.Lookup("", tt.model, tt.at)
		if !ok {
			t.Errorf("%s: no match", tt.name)
			continue
		}
		if e.Version != tt.wantVersion || p.Input != tt.wantInput || p.Output != tt.wantOutput {
			t.Errorf("%s: version %s input %v output %v, want %s %v %v", tt.name, e.Version, p.Input, p.Output,
				tt.wantVersion, tt.wantInput, tt.wantOutput)
		}
	}
}

func TestMinCachePrefix(t *testing.T) {
	c := builtin(t)
	at := date("2025-11-15")
	tests := []struct {
		provider, model string
		want            int
		wantOK          bool
	}{
		{"anthropic", "claude-sonnet-4-5-20250929", 1024, true},
		{"anthropic", "claude-3-5-haiku-20241022", 2048, true},
		{"anthropic", "claude-haiku-4-5", 4096, true},
		{"aws.bedrock", "us.anthropic.claude-opus-4-1-20250805-v1:0", 1024, true},
		{"openai", "gpt-4o", 1024, true},
		{"gcp.gemini", "gemini-2.5-pro", 2048, true},
		{"gcp.gemini", "gemini-2.5-flash", 1024, true},
		{"deepseek", "deepseek-chat", 64, true},
		{"mistral_ai", "mistral-large-latest", 0, false}, // no prompt caching
		{"openai", "my-finetune-xyz", 0, false},          // unknown model
	}
	for _, tt := range tests {
		got, ok := c.MinCachePrefix(tt.provider, tt.model, at)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("MinCachePrefix(%q, %q) = %d, %v; want %d, %v", tt.provider, tt.model, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestLookupIsSafeForConcurrentUse(t *testing.T) {
	c := builtin(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if e, _, ok := c.Lookup("openai", "gpt-4o-mini-2024-07-18", time.Time{}); !ok || e.ID != "openai/gpt-4o-mini" {
					t.Errorf("concurrent Lookup = %q, %v", e.ID, ok)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestPriceNote: a dated snapshot the catalog neither lists nor aliases is
// priced as its alias and says so; a known snapshot (an entry, an alias, a
// platform's dated model id) says nothing.
func TestPriceNote(t *testing.T) {
	c := builtin(t)
	for _, tt := range []struct {
		provider, model string
		noted           bool
	}{
		{"openai", "gpt-4o-2099-01-01", true},              // unknown snapshot of gpt-4o
		{"openai", "gpt-4o-2024-08-06", false},             // an alias of gpt-4o
		{"openai", "gpt-4o-2024-05-13", false},             // its own entry
		{"openai", "gpt-4o", false},                        // no date
		{"anthropic", "claude-sonnet-4-5-20250929", false}, // Bedrock's and Vertex's ids name it
		{"anthropic", "claude-sonnet-4-5-20991231", true},
	} {
		s := schema.Span{Provider: tt.provider, Model: tt.model, Start: date("2025-11-15"),
			InputTokens: 1000, OutputTokens: 100, UsageMode: schema.UsageInclusive}
		c.Apply(&s)
		if s.CostSource != schema.CostCatalog {
			t.Errorf("%s: cost source %q, want catalog", tt.model, s.CostSource)
			continue
		}
		note := c.PriceNote(&s)
		if (note != "") != tt.noted {
			t.Errorf("%s: note %q, want a note %v", tt.model, note, tt.noted)
		}
		if tt.noted && !strings.Contains(note, tt.model) {
			t.Errorf("%s: the note %q does not name the model", tt.model, note)
		}
	}
	// The snapshot's own price: 1000 × $5/M + 100 × $15/M = 0.005 + 0.0015 = 0.0065 (gpt-4o would be
	// 0.0025 + 0.001 = 0.0035).
	s := schema.Span{Provider: "openai", Model: "gpt-4o-2024-05-13", Start: date("2025-11-15"),
		InputTokens: 1000, OutputTokens: 100, UsageMode: schema.UsageInclusive}
	c.Apply(&s)
	checkCosts(t, "gpt-4o-2024-05-13", s, costs{0.005, 0, 0, 0.0015, 0.0065})
}
