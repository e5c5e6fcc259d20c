package safety

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Tools are the tools offered to a model, by name: each one's JSON schema
// for its arguments (nil when the definition had none).
type Tools map[string]*ToolDef

// ToolDef is one offered tool.
type ToolDef struct {
	Name string
	// Schema is the arguments' JSON schema as sent (decoded), nil for none.
	Schema any
	// key identifies the schema's text, for compiling it once per review.
	key string
}

// AddDefinitions adds the tools of one recorded definitions value to t
// and reports whether it held any. It reads the shapes the instrumentations
// send: a JSON array (or one object) of definitions, each an object or a
// JSON string of one (Vercel's ai.prompt.tools); a definition names its
// tool in "name" or "function.name" (OpenAI's chat format) and its schema
// in "parameters", "function.parameters", "input_schema" (Anthropic) or
// "inputSchema" (MCP, the AI SDK); Gemini's {"functionDeclarations": […]}
// is unwrapped.
func (t Tools) AddDefinitions(value string) bool {
	var v any
	if json.Unmarshal([]byte(value), &v) != nil {
		return false
	}
	n := len(t)
	t.add(v, 0)
	return len(t) > n
}

// add reads one definitions value (depth bounds nesting).
func (t Tools) add(v any, depth int) {
	if depth > 4 {
		return
	}
	switch x := v.(type) {
	case string:
		var inner any
		if json.Unmarshal([]byte(x), &inner) == nil {
			t.add(inner, depth+1)
		}
	case []any:
		for _, e := range x {
			t.add(e, depth+1)
		}
	case map[string]any:
		for _, k := range []string{"functionDeclarations", "function_declarations", "tools"} {
			if list, ok := x[k].([]any); ok {
				t.add(list, depth+1)
				return
			}
		}
		def := x
		if fn, ok := x["function"].(map[string]any); ok {
			def = fn
		}
		name, _ := def["name"].(string)
		if name == "" {
			return
		}
		td := &ToolDef{Name: name}
		for _, k := range []string{"parameters", "input_schema", "inputSchema"} {
			if s, ok := def[k]; ok && s != nil {
				if b, err := json.Marshal(s); err == nil {
					td.Schema, td.key = s, string(b)
				}
				break
			}
		}
		t[name] = td
	}
}

// Names are the offered tools' names, sorted.
func (t Tools) Names() []string {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Registry is the configured list of tools a project's agents may call
// (tally serve --tool-registry), as name patterns per project or for all.
// A project with no patterns of its own or for all has no registry.
type Registry struct {
	rules []rule
}

// ParseRegistry reads patterns written [project:]glob (path.Match globs).
func ParseRegistry(specs []string) (*Registry, error) {
	r := &Registry{}
	for _, spec := range specs {
		project, pattern, scoped := strings.Cut(spec, ":")
		if !scoped {
			project, pattern = "", spec
		}
		if pattern == "" {
			return nil, fmt.Errorf("tool registry %q: empty tool pattern", spec)
		}
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, fmt.Errorf("tool registry %q: bad pattern: %w", spec, err)
		}
		r.rules = append(r.rules, rule{project: project, pattern: pattern})
	}
	return r, nil
}

// Allows reports whether the registry has patterns for the project and,
// if it does, whether tool matches one of them.
func (r *Registry) Allows(project, tool string) (configured, allowed bool) {
	if r == nil {
		return false, false
	}
	for _, ru := range r.rules {
		if ru.project != "" && ru.project != project {
			continue
		}
		configured = true
		if ok, _ := path.Match(ru.pattern, tool); ok {
			return true, true
		}
	}
	return configured, false
}

// callIndex finds the inference call that asked for a tool step — the
// step's parent when that is a call, else the latest call started before
// the step under the same parent, else the latest call started before it
// anywhere in the run — in O(log n) a step.
type callIndex struct {
	byID     map[string]*Call
	all      []*Call            // by start, then span id
	byParent map[string][]*Call // the same order
}

// newCallIndex indexes a run's calls.
func newCallIndex(calls []Call) *callIndex {
	x := &callIndex{byID: make(map[string]*Call, len(calls)), byParent: map[string][]*Call{}}
	for i := range calls {
		c := &calls[i]
		x.byID[c.SpanID] = c
		x.all = append(x.all, c)
	}
	slices.SortFunc(x.all, func(a, b *Call) int {
		return cmp.Or(cmp.Compare(a.StartNs, b.StartNs), cmp.Compare(a.SpanID, b.SpanID))
	})
	for _, c := range x.all {
		x.byParent[c.ParentSpanID] = append(x.byParent[c.ParentSpanID], c)
	}
	return x
}

// latestBefore is the last call of sorted that started at or before t.
func latestBefore(sorted []*Call, t uint64) *Call {
	i := sort.Search(len(sorted), func(i int) bool { return sorted[i].StartNs > t })
	if i == 0 {
		return nil
	}
	return sorted[i-1]
}

// requester is the call that asked for step s; nil when none did.
func (x *callIndex) requester(s *Step) *Call {
	if c := x.byID[s.ParentSpanID]; c != nil {
		return c
	}
	if c := latestBefore(x.byParent[s.ParentSpanID], s.StartNs); c != nil {
		return c
	}
	return latestBefore(x.all, s.StartNs)
}

// offeredSignals checks each named tool step against the registry and the
// tools its requesting call was offered:
//
//   - unknown_tool: the project has a registry and the tool matches none of
//     its patterns; or the requesting call recorded the tools it was
//     offered and this one was not among them.
//   - invalid_arguments: the step's recorded arguments are not JSON, or do
//     not validate against the offered tool's schema. An object schema
//     that lists properties, says nothing of others and combines with no
//     other schema is read strictly (additionalProperties: false; see
//     strict): a field the tool does not know is a field it silently
//     drops.
//
// Checks are bounded (see ValidationLimits): a call whose schema is too
// large or too complex to check, or that comes after the run's validation
// time ran out, raises unchecked_arguments instead.
func offeredSignals(run Run, steps []Step, reg *Registry, val *Validator) []Signal {
	var out []Signal
	calls := newCallIndex(run.Calls)
	var spent time.Duration
	for i := range steps {
		s := &steps[i]
		if s.Tool == "" {
			continue
		}
		call := calls.requester(s)
		if configured, ok := reg.Allows(run.Project, s.Tool); configured && !ok {
			out = append(out, Signal{Kind: KindUnknownTool, SpanID: s.SpanID, SpanIDs: []string{s.SpanID}, Tool: s.Tool,
				Reason: fmt.Sprintf("tool %s is not in the configured tool registry", s.Tool)})
			continue
		}
		if call == nil || call.Offered == nil {
			continue
		}
		def := call.Offered[s.Tool]
		if def == nil {
			names := call.Offered.Names()
			if len(names) > 8 {
				names = append(names[:8], fmt.Sprintf("and %d more", len(call.Offered)-8))
			}
			out = append(out, Signal{Kind: KindUnknownTool, SpanID: s.SpanID, SpanIDs: []string{call.SpanID, s.SpanID}, Tool: s.Tool,
				Reason: fmt.Sprintf("tool %s was called but the model was offered only %s", s.Tool, strings.Join(names, ", "))})
			continue
		}
		if s.Args == "" {
			continue
		}
		signal := func(kind SignalKind, reason string) {
			out = append(out, Signal{Kind: kind, SpanID: s.SpanID, SpanIDs: []string{call.SpanID, s.SpanID}, Tool: s.Tool, Reason: reason})
		}
		began := time.Now()
		v := val.check(def.key, s.Args, spent <= val.limits.MaxRunTime)
		spent += time.Since(began)
		switch {
		case v.notJSON:
			signal(KindInvalidArguments, fmt.Sprintf("tool %s was called with arguments that are not JSON", s.Tool))
		case v.unchecked != "":
			signal(KindUncheckedArguments, uncheckedReason(s.Tool, v.unchecked))
		case v.violation != "":
			signal(KindInvalidArguments, fmt.Sprintf("tool %s was called with arguments its schema rejects: %s", s.Tool, v.violation))
		}
	}
	return out
}

// noLoader refuses every reference outside the schema: a schema sent in a
// span must not make tally read files or fetch URLs.
type noLoader struct{}

// Load refuses.
func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("reference %s outside the tool's schema is not followed", url)
}

// compileStrict compiles a schema text, read strictly (see offeredSignals);
// nil when it does not compile.
func compileStrict(text string) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil
	}
	strict(doc, 0)
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if c.AddResource("tool.json", doc) != nil {
		return nil
	}
	sch, err := c.Compile("tool.json")
	if err != nil {
		return nil
	}
	return sch
}

// applicators are the keywords that combine a schema with others: an
// object using one may get properties from them, so it is not closed.
var applicators = []string{"allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "if", "then", "else", "not",
	"dependentSchemas", "dependencies", "patternProperties", "additionalProperties", "unevaluatedProperties"}

// strict closes object schemas that list properties and leave others open
// and combine with nothing (see applicators); it recurses into properties,
// items and $defs, and into anyOf/oneOf branches of an object that lists no
// properties of its own (a union of whole objects).
func strict(v any, depth int) {
	m, ok := v.(map[string]any)
	if !ok || depth > 32 {
		return
	}
	props, hasProps := m["properties"].(map[string]any)
	if hasProps {
		combined := false
		for _, k := range applicators {
			if _, ok := m[k]; ok {
				combined = true
				break
			}
		}
		if !combined {
			m["additionalProperties"] = false
		}
		for _, sub := range props {
			strict(sub, depth+1)
		}
	}
	strict(m["items"], depth+1)
	if !hasProps {
		for _, k := range []string{"anyOf", "oneOf"} {
			if list, ok := m[k].([]any); ok {
				for _, sub := range list {
					strict(sub, depth+1)
				}
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := m[k].(map[string]any); ok {
			for _, sub := range defs {
				strict(sub, depth+1)
			}
		}
	}
}

// firstViolation is the validator's first concrete complaint, one line.
func firstViolation(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		for len(ve.Causes) > 0 {
			ve = ve.Causes[0]
		}
		at := "/" + strings.Join(ve.InstanceLocation, "/")
		msg := ve.Error()
		if i := strings.LastIndex(msg, "': "); i >= 0 {
			msg = msg[i+3:]
		}
		return fmt.Sprintf("at %s: %s", at, strings.TrimSpace(msg))
	}
	return strings.SplitN(err.Error(), "\n", 2)[0]
}
