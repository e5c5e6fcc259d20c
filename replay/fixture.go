// Package replay turns what a recorded run's tools returned into
// deterministic offline test fixtures, and plays them back.
//
// A Fixture (format "tally.replay/v1", see FORMAT.md) holds one run's tool
// calls in execution order with their canonical arguments, argument hash and
// recorded result or error. Build makes one from a run's span and content
// rows; MarshalDeterministic encodes it to identical bytes every time; Load and
// Parse read it back. A Player answers an agent's tool calls from a fixture
// under `go test`, with no server; NewServer exposes players over HTTP for
// agents not written in Go. WriteArrow and WriteParquet export many fixtures'
// calls, one row per call, for analysis.
package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/tallyhq/tally/support/canonical"
)

// FormatV1 is the format identifier of the fixtures this package writes and
// reads.
const FormatV1 = "tally.replay/v1"

// Names used in Call.Missing, Call.Truncated, Inference.Missing and
// Inference.Truncated.
const (
	PartArguments = "arguments"
	PartResult    = "result"
	PartOutput    = "output"
)

// Fixture is one recorded run: its identity and, in execution order, every
// tool call (and optionally every inference call) it made.
type Fixture struct {
	Format     string         `json:"format"` // always FormatV1
	Run        RunInfo        `json:"run"`
	Calls      []Call         `json:"calls"`
	Inferences []Inference    `json:"inferences,omitempty"`
	Missing    MissingSummary `json:"missing"`
}

// RunInfo identifies the run a fixture was recorded from.
type RunInfo struct {
	TraceID        string `json:"trace_id"`
	ConversationID string `json:"conversation_id"`
	Agent          string `json:"agent"`
	Task           string `json:"task"`
	Service        string `json:"service"`
	StartedAt      string `json:"started_at"`     // RFC 3339 with nanoseconds, UTC
	SourceVersion  string `json:"source_version"` // version of the tally that exported the fixture
}

// Call is one recorded tool call.
type Call struct {
	Seq          int    `json:"seq"` // 1-based position in execution order (start time, then span id)
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id,omitempty"`
	StartedAt    string `json:"started_at"` // RFC 3339 with nanoseconds, UTC
	Tool         string `json:"tool"`
	ToolCallID   string `json:"tool_call_id,omitempty"`

	// Arguments holds the canonical JSON arguments; ArgumentsText holds them
	// instead when they were not valid JSON or were truncated at ingest.
	Arguments     json.RawMessage `json:"arguments,omitempty"`
	ArgumentsText string          `json:"arguments_text,omitempty"`
	// ArgsHash is the hex SHA-256 of the canonical arguments (canonical.Hash),
	// the value a player matches calls by. Empty when the arguments were not
	// captured and ingest stored no hash.
	ArgsHash string `json:"args_hash"`

	// Result holds the JSON result; ResultText holds it instead when it was not
	// valid JSON (plain text) or was truncated at ingest.
	Result     json.RawMessage `json:"result,omitempty"`
	ResultText string          `json:"result_text,omitempty"`
	Error      *CallError      `json:"error,omitempty"`

	Status     string  `json:"status"`  // ok, error or unset, as the span ended
	Attempt    int     `json:"attempt"` // 0 unknown, 1 first try, >= 2 a retry
	DurationMs float64 `json:"duration_ms"`

	// Missing lists the parts (PartArguments, PartResult) whose content was
	// not captured. A missing part is never exported as an empty value.
	Missing []string `json:"missing,omitempty"`
	// Truncated lists the parts whose recorded content was cut at ingest's
	// size limit; they are kept in ArgumentsText / ResultText.
	Truncated []string `json:"truncated,omitempty"`

	// Fault, set by hand in a fixture, makes a player answer this call
	// with the fault instead of its recording (see fault.go); never
	// exported.
	Fault *Fault `json:"fault,omitempty"`
}

// CallError is the error a recorded call ended with.
type CallError struct {
	Type    string `json:"type"` // error.type, or "_OTHER" when the span only had an error status
	Message string `json:"message"`
}

// Inference is one recorded model call, for agents that replay the model too.
type Inference struct {
	Seq           int             `json:"seq"` // 1-based position among the inferences, in execution order
	SpanID        string          `json:"span_id"`
	ParentSpanID  string          `json:"parent_span_id,omitempty"`
	StartedAt     string          `json:"started_at"`
	Operation     string          `json:"operation"`
	Provider      string          `json:"provider"`
	Model         string          `json:"model"`
	FinishReasons []string        `json:"finish_reasons,omitempty"`
	Usage         Usage           `json:"usage"`
	Output        json.RawMessage `json:"output,omitempty"`      // canonical JSON of the output messages
	OutputText    string          `json:"output_text,omitempty"` // output when not valid JSON or truncated
	Error         *CallError      `json:"error,omitempty"`
	Status        string          `json:"status"`
	DurationMs    float64         `json:"duration_ms"`
	Missing       []string        `json:"missing,omitempty"`   // PartOutput when not captured
	Truncated     []string        `json:"truncated,omitempty"` // PartOutput when cut at ingest
}

// Usage is an inference's token usage in tally's non-overlapping buckets.
type Usage struct {
	InputTokens      uint64 `json:"input_tokens"` // all input, cache read and write included
	CacheReadTokens  uint64 `json:"cache_read_tokens"`
	CacheWriteTokens uint64 `json:"cache_write_tokens"`
	OutputTokens     uint64 `json:"output_tokens"` // reasoning included
	ReasoningTokens  uint64 `json:"reasoning_tokens"`
}

// MissingSummary lists, by call Seq, the calls whose arguments or results
// were not captured.
type MissingSummary struct {
	Arguments []int `json:"arguments"`
	Results   []int `json:"results"`
}

// MarshalDeterministic encodes the fixture so that the same fixture always
// gives the same bytes: keys sorted at every level, arguments and results in
// canonical form, two-space indentation, a trailing newline, no export time.
func (f *Fixture) MarshalDeterministic() ([]byte, error) {
	out := *f
	if out.Calls == nil {
		out.Calls = []Call{}
	}
	if out.Missing.Arguments == nil {
		out.Missing.Arguments = []int{}
	}
	if out.Missing.Results == nil {
		out.Missing.Results = []int{}
	}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return nil, fmt.Errorf("replay: encode fixture: %w", err)
	}
	sorted, err := canonical.JSON(plain.Bytes())
	if err != nil {
		return nil, fmt.Errorf("replay: canonicalize fixture: %w", err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, sorted, "", "  "); err != nil {
		return nil, fmt.Errorf("replay: indent fixture: %w", err)
	}
	indented.WriteByte('\n')
	return indented.Bytes(), nil
}

// Load reads and parses the fixture file at path.
func Load(path string) (*Fixture, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("replay: load fixture: %w", err)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse decodes a fixture. It rejects a document whose format is not
// FormatV1, unknown fields (a typo in a hand-edited fixture must not pass
// silently), and calls without a tool name.
func Parse(b []byte) (*Fixture, error) {
	var head struct {
		Format *string `json:"format"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("replay: parse fixture: %w", err)
	}
	if head.Format == nil {
		return nil, errors.New(`replay: parse fixture: not a tally replay fixture (no "format" field)`)
	}
	if *head.Format != FormatV1 {
		return nil, fmt.Errorf("replay: parse fixture: unsupported format %q: this build reads %q", *head.Format, FormatV1)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f Fixture
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("replay: parse fixture: %w", err)
	}
	for i, c := range f.Calls {
		if c.Tool == "" {
			return nil, fmt.Errorf("replay: parse fixture: call %d (seq %d) has no tool", i, c.Seq)
		}
		if c.Fault != nil {
			if err := c.Fault.validate(); err != nil {
				return nil, fmt.Errorf("replay: parse fixture: call %d (seq %d): %w", i, c.Seq, err)
			}
		}
	}
	return &f, nil
}
