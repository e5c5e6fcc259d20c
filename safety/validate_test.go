package safety

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// chainSchema is issue #41's exponential schema: a tool whose arguments
// schema refers to $defs d0 … d(n-1), each anyOf two references to the
// next, the last an object whose x is a string. Arguments {"x": 1} fail
// every one of the 2^n paths, so a validator walks them all.
//
// The visits the step count makes, by hand: the leaf dn and its property
// x take 2 for the value {"x": 1}; each d(i) is 1, plus for each of its
// two branches 1 for the {"$ref"} schema and V(d(i+1)): V(i) = 3 + 2·V(i+1),
// so V(d0) = 5·2^n − 3, and the root {"$ref": "#/$defs/d0"} one more:
// 5·2^n − 2 steps.
func chainSchema(n int) string {
	var defs []string
	for i := range n {
		ref := fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[%s,%s]}`, i, ref, ref))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"x":{"type":"string"}}}`, n))
	return `[{"name":"chain","parameters":{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}}]`
}

// chainSteps is the step count of chainSchema(n) with {"x": 1}.
func chainSteps(n int) int { return 5<<n - 2 }

func reviewChain(t *testing.T, n int, val *Validator, args ...string) []Signal {
	t.Helper()
	tools := offered(t, chainSchema(n))
	run := Run{Project: "p", Calls: []Call{{SpanID: "llm", ParentSpanID: "agent", EndNs: 10 * ms, Offered: tools}}}
	for i, a := range args {
		run.Steps = append(run.Steps, Step{SpanID: fmt.Sprintf("t%d", i), ParentSpanID: "agent", Tool: "chain", Status: StatusOK,
			StartNs: uint64(20+i) * ms, EndNs: uint64(21+i) * ms, Args: a})
	}
	return Review(run, Config{Validator: val})
}

// signalList is the signals as kind@span, space-separated.
func signalList(signals []Signal) string {
	var out []string
	for _, s := range signals {
		out = append(out, string(s.Kind)+"@"+s.SpanID)
	}
	return strings.Join(out, " ")
}

// TestValidationBoundedBySteps is issue #41's second defect: the 1.5 KB
// chain of 20 levels took 17 s and 0.7 GB to validate. Past the step limit
// a call is unchecked_arguments, without validating; at the limit exactly
// it is validated.
func TestValidationBoundedBySteps(t *testing.T) {
	if len(chainSchema(20)) > 2048 {
		t.Fatalf("the chain of 20 is %d bytes; the issue's was about 1.5 KB", len(chainSchema(20)))
	}
	for _, c := range []struct {
		name  string
		n     int
		steps int
		want  string
	}{
		{"the issue's 20 levels at the default limit", 20, 0, "unchecked_arguments@t0"},
		{"8 levels at the default limit are checked", 8, 0, "invalid_arguments@t0"},
		{"at the limit exactly: checked", 8, chainSteps(8), "invalid_arguments@t0"},
		{"one step over: unchecked", 8, chainSteps(8) - 1, "unchecked_arguments@t0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			val := NewValidator(ValidationLimits{MaxSteps: c.steps})
			got := reviewChain(t, c.n, val, `{"x":1}`)
			if signalList(got) != c.want {
				t.Fatalf("signals %s, want %s", signalList(got), c.want)
			}
			if c.want == "unchecked_arguments@t0" && !strings.Contains(got[0].Reason, "too complex") {
				t.Errorf("reason %q does not say too complex", got[0].Reason)
			}
		})
	}
}

// TestValidatorCaches: a run reviewed again (the alert evaluator does
// every minute) compiles nothing and validates nothing again; the same
// verdict comes from the cache, the too-complex one included.
func TestValidatorCaches(t *testing.T) {
	val := NewValidator(ValidationLimits{})
	first := reviewChain(t, 20, val, `{"x":1}`, `{"x":"a"}`)
	if val.schemas.Len() != 1 || val.verdicts.Len() != 2 {
		t.Fatalf("after one review: %d schemas, %d verdicts cached; want 1 and 2", val.schemas.Len(), val.verdicts.Len())
	}
	second := reviewChain(t, 20, val, `{"x":1}`, `{"x":"a"}`)
	if signalList(first) != signalList(second) || signalList(first) != "unchecked_arguments@t0 unchecked_arguments@t1" {
		t.Errorf("first review %s, second %s; want both unchecked_arguments@t0 unchecked_arguments@t1", signalList(first), signalList(second))
	}
	if val.schemas.Len() != 1 || val.verdicts.Len() != 2 {
		t.Errorf("after the second review: %d schemas, %d verdicts cached; want still 1 and 2", val.schemas.Len(), val.verdicts.Len())
	}
}

// TestValidationSchemaSize: a schema of MaxSchemaBytes is compiled, one
// byte more is not.
func TestValidationSchemaSize(t *testing.T) {
	tools := offered(t, chainSchema(2))
	size := len(tools["chain"].key)
	for _, c := range []struct {
		limit int
		want  string
	}{{size, "invalid_arguments@t0"}, {size - 1, "unchecked_arguments@t0"}} {
		got := reviewChain(t, 2, NewValidator(ValidationLimits{MaxSchemaBytes: c.limit}), `{"x":1}`)
		if signalList(got) != c.want {
			t.Errorf("schema of %d bytes, limit %d: signals %s, want %s", size, c.limit, signalList(got), c.want)
		}
	}
}

// TestValidationRunTime: once a run's validation time is spent, later
// calls are unchecked. With a limit of 1 ns the first call is validated
// (nothing spent yet) and takes longer than that, so the second is not;
// arguments that are not JSON are still said to be so, the budget spent
// or not.
func TestValidationRunTime(t *testing.T) {
	got := reviewChain(t, 2, NewValidator(ValidationLimits{MaxRunTime: time.Nanosecond}), `{"x":1}`, `{"x":2}`, `{"x":`)
	if signalList(got) != "invalid_arguments@t0 unchecked_arguments@t1 invalid_arguments@t2" {
		t.Fatalf("signals %s, want invalid_arguments@t0 unchecked_arguments@t1 invalid_arguments@t2", signalList(got))
	}
	if !strings.Contains(got[1].Reason, "validation time of 1ns ran out") {
		t.Errorf("reason %q", got[1].Reason)
	}
}

// BenchmarkValidateChain: the chain schema of n levels, validated (n=15:
// 163,838 steps, under the default limit) and refused by the step count
// (n=20), each with a validator that caches nothing between iterations.
func BenchmarkValidateChain(b *testing.B) {
	for _, n := range []int{15, 20} {
		b.Run(fmt.Sprintf("levels=%d", n), func(b *testing.B) {
			tools := Tools{}
			if !tools.AddDefinitions(chainSchema(n)) {
				b.Fatal("no tools")
			}
			run := Run{Project: "p", Calls: []Call{{SpanID: "llm", EndNs: 10 * ms, Offered: tools}},
				Steps: []Step{{SpanID: "t", Tool: "chain", Status: StatusOK, StartNs: 20 * ms, EndNs: 21 * ms, Args: `{"x":1}`}}}
			for b.Loop() {
				Review(run, Config{Validator: NewValidator(ValidationLimits{})})
			}
		})
	}
}
