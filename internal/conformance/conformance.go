// Package conformance loads the usage conformance corpus
// (ingest/testdata/conformance): runs as real instrumentations export them,
// written from each instrumentation's source, with the tokens and cost the
// provider bills worked out by hand. See FORMAT.md there. The ingest tests
// check each span's stored buckets; the query tests store the runs in
// ClickHouse and check every reader's run totals.
package conformance

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Scenario is one corpus file.
type Scenario struct {
	File            string                     `json:"-"`
	Name            string                     `json:"name"`
	Instrumentation string                     `json:"instrumentation"`
	Sources         []Source                   `json:"sources"`
	Notes           string                     `json:"notes"`
	Resource        map[string]json.RawMessage `json:"resource"`
	Scope           Scope                      `json:"scope"`
	Spans           []Span                     `json:"spans"`
	Expect          Expect                     `json:"expect"`
}

// Source cites where the instrumentation's behaviour was read.
type Source struct {
	Repo   string `json:"repo"`
	Path   string `json:"path"`
	Commit string `json:"commit"`
	What   string `json:"what"`
}

// Scope is an instrumentation scope.
type Scope struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Span is one span of a scenario.
type Span struct {
	ID            string                     `json:"id"`
	Parent        string                     `json:"parent"`
	Name          string                     `json:"name"`
	Kind          string                     `json:"kind"`
	Status        string                     `json:"status"`
	Scope         *Scope                     `json:"scope"`
	StartOffsetMs *float64                   `json:"start_offset_ms"`
	DurationMs    *float64                   `json:"duration_ms"`
	Attributes    map[string]json.RawMessage `json:"attributes"`
}

// Expect is what tally must store and count.
type Expect struct {
	Spans map[string]SpanExpect `json:"spans"`
	Run   *RunExpect            `json:"run"`
}

// SpanExpect is one span's stored buckets; nil fields are not checked.
type SpanExpect struct {
	Input      *uint64  `json:"input"`
	CacheRead  *uint64  `json:"cache_read"`
	CacheWrite *uint64  `json:"cache_write"`
	Output     *uint64  `json:"output"`
	Reasoning  *uint64  `json:"reasoning"`
	Counted    *bool    `json:"counted"`
	CostSource *string  `json:"cost_source"`
	CostUSD    *float64 `json:"cost_usd"`
	// CostConfidence is how sure the span's cost is (schema.Confidence*;
	// "" for a span with no cost).
	CostConfidence *string `json:"cost_confidence"`
}

// RunExpect is the run's counted usage and cost.
type RunExpect struct {
	Input      uint64  `json:"input"`
	CacheRead  uint64  `json:"cache_read"`
	CacheWrite uint64  `json:"cache_write"`
	Output     uint64  `json:"output"`
	Reasoning  uint64  `json:"reasoning"`
	CostUSD    float64 `json:"cost_usd"`
	// UnpricedSpans and UnreconciledSpans, when set, are the run's spans
	// left unpriced and those whose usage could not be reconciled: a span
	// tally cannot bill is counted as such, never priced at $0.
	UnpricedSpans     *int `json:"unpriced_spans"`
	UnreconciledSpans *int `json:"unreconciled_spans"`
	// LLMCalls, when set, is the run's calls: each call once, whichever of
	// its spans carries the usage.
	LLMCalls *int `json:"llm_calls"`
	// CostConfidence, when set, is how sure the run's cost is
	// (schema.Confidence*).
	CostConfidence *string `json:"cost_confidence"`
}

// Start is when every scenario's first span starts.
var Start = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// Load reads every *.json file of dir, sorted by name. Unknown fields are an
// error, so a typo in a fixture cannot silently skip a check.
func Load(dir string) ([]Scenario, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []Scenario
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var sc Scenario
		if err := dec.Decode(&sc); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
		sc.File = filepath.Base(p)
		if err := sc.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.File, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

func (sc *Scenario) check() error {
	if sc.Name == "" || len(sc.Spans) == 0 {
		return fmt.Errorf("needs a name and spans")
	}
	if len(sc.Sources) == 0 {
		return fmt.Errorf("cites no source")
	}
	ids := map[string]bool{}
	for _, s := range sc.Spans {
		if s.ID == "" || ids[s.ID] {
			return fmt.Errorf("span id %q missing or repeated", s.ID)
		}
		ids[s.ID] = true
	}
	for _, s := range sc.Spans {
		if s.Parent != "" && !ids[s.Parent] {
			return fmt.Errorf("span %q: parent %q is not a span of the scenario", s.ID, s.Parent)
		}
	}
	for id := range sc.Expect.Spans {
		if !ids[id] {
			return fmt.Errorf("expect names span %q, which the scenario lacks", id)
		}
	}
	return nil
}

// TraceID is the scenario's trace id (hex), derived from its name.
func (sc *Scenario) TraceID() string {
	id := sc.traceID()
	return fmt.Sprintf("%x", id[:])
}

func (sc *Scenario) traceID() pcommon.TraceID {
	h := sha256.Sum256([]byte("trace/" + sc.Name))
	var id pcommon.TraceID
	copy(id[:], h[:16])
	return id
}

// SpanID is the span id (hex) of the scenario's span with local id local.
func (sc *Scenario) SpanID(local string) string {
	id := sc.spanID(local)
	return fmt.Sprintf("%x", id[:])
}

func (sc *Scenario) spanID(local string) pcommon.SpanID {
	h := sha256.Sum256([]byte("span/" + sc.Name + "/" + local))
	var id pcommon.SpanID
	copy(id[:], h[:8])
	return id
}

// Traces builds the scenario as one OTLP request: one resource, one scope
// per distinct span scope, the spans in file order.
func (sc *Scenario) Traces() (ptrace.Traces, error) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	if err := putAttrs(rs.Resource().Attributes(), sc.Resource); err != nil {
		return td, fmt.Errorf("resource: %w", err)
	}
	scopes := map[Scope]ptrace.ScopeSpans{}
	for i, s := range sc.Spans {
		scope := sc.Scope
		if s.Scope != nil {
			scope = *s.Scope
		}
		ss, ok := scopes[scope]
		if !ok {
			ss = rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(scope.Name)
			ss.Scope().SetVersion(scope.Version)
			scopes[scope] = ss
		}
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(sc.traceID())
		sp.SetSpanID(sc.spanID(s.ID))
		if s.Parent != "" {
			sp.SetParentSpanID(sc.spanID(s.Parent))
		}
		sp.SetName(s.Name)
		sp.SetKind(kind(s.Kind))
		switch strings.ToLower(s.Status) {
		case "error":
			sp.Status().SetCode(ptrace.StatusCodeError)
		case "ok":
			sp.Status().SetCode(ptrace.StatusCodeOk)
		}
		offset := time.Duration(i) * time.Millisecond
		if s.StartOffsetMs != nil {
			offset = time.Duration(*s.StartOffsetMs * float64(time.Millisecond))
		}
		dur := 100 * time.Millisecond
		if s.DurationMs != nil {
			dur = time.Duration(*s.DurationMs * float64(time.Millisecond))
		}
		start := Start.Add(offset)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(dur)))
		if err := putAttrs(sp.Attributes(), s.Attributes); err != nil {
			return td, fmt.Errorf("span %q: %w", s.ID, err)
		}
	}
	return td, nil
}

func kind(k string) ptrace.SpanKind {
	switch strings.ToLower(k) {
	case "client":
		return ptrace.SpanKindClient
	case "server":
		return ptrace.SpanKindServer
	case "producer":
		return ptrace.SpanKindProducer
	case "consumer":
		return ptrace.SpanKindConsumer
	case "internal":
		return ptrace.SpanKindInternal
	}
	return ptrace.SpanKindUnspecified
}

// putAttrs writes JSON values as OTLP values: a string as a string, a
// number without '.' or exponent as an int, other numbers as doubles, bools,
// arrays as arrays, objects as maps.
func putAttrs(m pcommon.Map, attrs map[string]json.RawMessage) error {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := setValue(m.PutEmpty(k), attrs[k]); err != nil {
			return fmt.Errorf("attribute %s: %w", k, err)
		}
	}
	return nil
}

func setValue(v pcommon.Value, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return fmt.Errorf("empty value")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		v.SetStr(s)
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return err
		}
		v.SetBool(b)
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return err
		}
		sl := v.SetEmptySlice()
		for _, it := range items {
			if err := setValue(sl.AppendEmpty(), it); err != nil {
				return err
			}
		}
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return err
		}
		if err := putAttrs(v.SetEmptyMap(), obj); err != nil {
			return err
		}
	case 'n':
		return fmt.Errorf("null is not an OTLP value")
	default:
		if bytes.ContainsAny(raw, ".eE") {
			var f float64
			if err := json.Unmarshal(raw, &f); err != nil {
				return err
			}
			v.SetDouble(f)
		} else {
			var i int64
			if err := json.Unmarshal(raw, &i); err != nil {
				return err
			}
			v.SetInt(i)
		}
	}
	return nil
}
