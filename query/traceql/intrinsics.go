package traceql

import "strings"

// IntrinsicDef describes an intrinsic: a field every span (or, for
// Trace ones, every run) has, by a name of its own rather than an
// attribute's.
type IntrinsicDef struct {
	Name    string   // the canonical spelling
	Aliases []string // other spellings (Tempo's older names)
	Type    Type
	// Trace is true for a run-level field: its value is the run's, the
	// same for each of the run's spans.
	Trace bool
	// Tally is true for tally's own intrinsics (not in Tempo's TraceQL).
	Tally bool
	// WithArg is true for trace:outcome.<name>: the intrinsic takes the
	// name after it.
	WithArg bool
	Doc     string
}

// Intrinsics lists every intrinsic, in the order the docs show them.
func Intrinsics() []IntrinsicDef {
	return []IntrinsicDef{
		{Name: "name", Aliases: []string{"span:name"}, Type: TString, Doc: "the span's name"},
		{Name: "status", Aliases: []string{"span:status"}, Type: TStatus, Doc: "ok, error or unset"},
		{Name: "statusMessage", Aliases: []string{"span:statusMessage"}, Type: TString, Doc: "the status description"},
		{Name: "kind", Aliases: []string{"span:kind"}, Type: TKind, Doc: "unspecified, internal, server, client, producer or consumer"},
		{Name: "duration", Aliases: []string{"span:duration"}, Type: TDuration, Doc: "the span's end − start"},
		{Name: "span:id", Type: TString, Doc: "the span id (hex)"},
		{Name: "span:parentID", Type: TString, Doc: "the parent's span id (hex); \"\" for a root"},
		{Name: "trace:id", Type: TString, Doc: "the trace (run) id (hex)"},
		{Name: "event:name", Type: TString, Doc: "the name of any of the span's events"},
		{Name: "instrumentation:name", Type: TString, Doc: "the instrumentation scope's name"},
		{Name: "instrumentation:version", Type: TString, Doc: "the instrumentation scope's version"},
		{Name: "content", Type: TString, Tally: true, Doc: "any captured content of the span: messages, system instructions, tool arguments and results"},
		{Name: "cost", Type: TNumber, Tally: true, Doc: "the span's cost in USD, as tally priced it"},
		{Name: "tokens", Type: TNumber, Tally: true, Doc: "input + output tokens, as tally counted them"},
		{Name: "input_tokens", Type: TNumber, Tally: true, Doc: "input tokens (cache reads and writes included), as tally counted them"},
		{Name: "cache_read_tokens", Type: TNumber, Tally: true, Doc: "input tokens read from the prompt cache"},
		{Name: "cache_write_tokens", Type: TNumber, Tally: true, Doc: "input tokens written to the prompt cache"},
		{Name: "output_tokens", Type: TNumber, Tally: true, Doc: "output tokens (reasoning included)"},
		{Name: "reasoning_tokens", Type: TNumber, Tally: true, Doc: "reasoning tokens"},
		{Name: "agent", Type: TString, Tally: true, Doc: "the agent's name, from whichever dialect the span used"},
		{Name: "model", Type: TString, Tally: true, Doc: "the model (the response's, else the request's)"},
		{Name: "provider", Type: TString, Tally: true, Doc: "the provider, canonical (openai, anthropic, …)"},
		{Name: "tool", Type: TString, Tally: true, Doc: "the tool a tool span ran"},
		{Name: "operation", Type: TString, Tally: true, Doc: "chat, execute_tool, invoke_agent, embeddings, …"},
		{Name: "args", Type: TString, Tally: true, Doc: "a digest of a tool call's arguments (canonical JSON): equal arguments, equal digests; group by it"},
		{Name: "effect", Type: TString, Tally: true, Doc: "a tool call's effect class: read, write, irreversible or unknown"},
		{Name: "step", Type: TString, Tally: true, Doc: "a tool step's terminal status: ok, retryable, ambiguous, denied, escalated or error"},
		{Name: "counted", Type: TBool, Tally: true, Doc: "true when the span's usage counts toward the run's (not a repeat of its children's)"},
		{Name: "retry", Type: TBool, Tally: true, Doc: "true when the tool call retries an earlier call (docs/design.md's retry rules)"},
		{Name: "retry_class", Type: TString, Tally: true, Doc: "a tool call's retry class: original, retry_attempt, retry_call_id, retry_step, retry_after_error or repeat"},
		{Name: "retry_args", Type: TString, Tally: true, Doc: "for a retry, same or changed: its arguments against those of the call it retries"},
		{Name: "trace:duration", Aliases: []string{"traceDuration"}, Type: TDuration, Trace: true, Doc: "the run's end − start"},
		{Name: "trace:rootName", Aliases: []string{"rootName"}, Type: TString, Trace: true, Doc: "the root span's name"},
		{Name: "trace:rootService", Aliases: []string{"rootServiceName"}, Type: TString, Trace: true, Doc: "the root span's service"},
		{Name: "trace:status", Type: TStatus, Trace: true, Tally: true, Doc: "the run's outcome: error when its root span ended in error, else ok"},
		{Name: "trace:cost", Type: TNumber, Trace: true, Tally: true, Doc: "the run's cost in USD"},
		{Name: "trace:task", Type: TString, Trace: true, Tally: true, Doc: "the run's task"},
		{Name: "trace:conversation", Type: TString, Trace: true, Tally: true, Doc: "the run's conversation (session) id"},
		{Name: "trace:user", Type: TString, Trace: true, Tally: true, Doc: "the run's user id"},
		{Name: "trace:outcome", Type: TAny, Trace: true, Tally: true, WithArg: true, Doc: "trace:outcome.<name>: the run's outcome of that name (pass, fail, or the posted value)"},
		{Name: "trace:signal", Type: TString, Trace: true, Tally: true, Doc: "any safety signal kind the run's review raised"},
		{Name: "trace:version", Type: TString, Trace: true, Tally: true, Doc: "the run's configuration fingerprint"},
	}
}

// lookupIntrinsic finds an intrinsic by any of its spellings;
// trace:outcome.<name> yields the outcome intrinsic and name.
func lookupIntrinsic(defs []IntrinsicDef, word string) (*IntrinsicDef, string, bool) {
	for i := range defs {
		d := &defs[i]
		if d.WithArg {
			if arg, ok := strings.CutPrefix(word, d.Name+"."); ok && arg != "" {
				return d, arg, true
			}
			continue
		}
		if word == d.Name {
			return d, "", true
		}
		for _, a := range d.Aliases {
			if word == a {
				return d, "", true
			}
		}
	}
	return nil, "", false
}
