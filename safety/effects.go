// Package safety holds the rules of the safety review of a run that
// reliable-agent playbooks ask for: what each tool can do to the world (its
// effect class), how each tool step ended (its terminal status), and the
// signals a run's steps raise — a side effect performed twice, a
// non-idempotent step retried after an ambiguous outcome. It reads no data:
// package query feeds it a run's tool steps.
package safety

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Effect is what a tool call can do to the world.
type Effect string

// The effect classes. A read changes nothing; an idempotent write changes
// the world once however often it is repeated with the same key; a
// non-idempotent write changes it again on every call; an irreversible one
// cannot be undone.
const (
	EffectUnknown       Effect = "unknown"
	EffectRead          Effect = "read"
	EffectIdempotent    Effect = "idempotent"
	EffectNonIdempotent Effect = "non_idempotent"
	EffectIrreversible  Effect = "irreversible"
)

// Effects are the effect classes in the order docs/api.md lists them:
// from the harmless to the irreversible, then unknown
// (ui/static/lib/vocab.js lists them again, and a test in ui holds the two
// equal).
func Effects() []Effect {
	return []Effect{EffectRead, EffectIdempotent, EffectNonIdempotent, EffectIrreversible, EffectUnknown}
}

// EffectAttribute is the span attribute a tool span may declare its effect
// class with; it wins over the configured patterns.
const EffectAttribute = "tally.tool.effect"

// SideEffecting reports whether calling the tool twice may change the
// world twice.
func (e Effect) SideEffecting() bool { return e == EffectNonIdempotent || e == EffectIrreversible }

// ParseEffect reads an effect class name, case and surrounding space
// aside; ok is false, and the effect unknown, when s names none.
func ParseEffect(s string) (e Effect, ok bool) {
	e = Effect(strings.ToLower(strings.TrimSpace(s)))
	if !slices.Contains(Effects(), e) {
		return EffectUnknown, false
	}
	return e, true
}

// Policy assigns effect classes to tools by name pattern, per project or
// for all. The zero Policy (or nil) knows no tool: every tool is unknown
// unless its spans declare their class.
type Policy struct {
	rules []rule
}

// rule is one "[project:]pattern=class".
type rule struct {
	project, pattern string
	effect           Effect
}

// ParsePolicy reads patterns written [project:]glob=class (path.Match
// globs: charge_*=irreversible, payments:refund_*=non_idempotent). The
// first matching pattern decides; a project's patterns are tried before the
// ones for all projects.
func ParsePolicy(specs []string) (*Policy, error) {
	p := &Policy{}
	for _, spec := range specs {
		lhs, class, ok := strings.Cut(spec, "=")
		if !ok {
			return nil, fmt.Errorf("tool effect %q: want [project:]pattern=class", spec)
		}
		e, ok := ParseEffect(class)
		if !ok {
			return nil, fmt.Errorf("tool effect %q: class %q is not one of %s", spec, class, joinEffects())
		}
		project, pattern, scoped := strings.Cut(lhs, ":")
		if !scoped {
			project, pattern = "", lhs
		}
		if pattern == "" {
			return nil, fmt.Errorf("tool effect %q: empty tool pattern", spec)
		}
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, fmt.Errorf("tool effect %q: bad pattern: %w", spec, err)
		}
		p.rules = append(p.rules, rule{project: project, pattern: pattern, effect: e})
	}
	return p, nil
}

// Effect is the class of a tool of a project: the span's declared class
// (declared, the EffectAttribute value; ignored when not a class name),
// else the first matching pattern of the project, else of all projects,
// else unknown.
func (p *Policy) Effect(project, tool, declared string) Effect {
	if e, ok := ParseEffect(declared); ok {
		return e
	}
	if p == nil {
		return EffectUnknown
	}
	for _, scoped := range []bool{true, false} {
		for _, r := range p.rules {
			if (r.project != "") != scoped || (scoped && r.project != project) {
				continue
			}
			if ok, _ := path.Match(r.pattern, tool); ok {
				return r.effect
			}
		}
	}
	return EffectUnknown
}

// joinEffects lists the effect class names for an error message.
func joinEffects() string {
	names := make([]string, 0, len(Effects()))
	for _, e := range Effects() {
		names = append(names, string(e))
	}
	return strings.Join(names, ", ")
}
