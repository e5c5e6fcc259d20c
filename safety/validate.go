package safety

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ValidationLimits bound the work of checking tool arguments against the
// schemas the model was offered. A JSON schema can make a validator's work
// grow exponentially with its size (20 chained $defs of anyOf with two
// references each: 2^20 evaluations for arguments {"x": 1}); tally checks
// schemas sent by any client, so every check is bounded before it runs.
type ValidationLimits struct {
	// MaxSteps bounds one validation: the most (subschema, value) visits
	// it may take, counted over the compiled schema and the arguments
	// before validating (an upper bound of the validator's work). Past it
	// the call is reported unchecked_arguments ("too complex") instead of
	// validated. Default DefaultMaxValidationSteps.
	MaxSteps int
	// MaxRunTime bounds the time one run's review spends validating;
	// the steps after it are reported unchecked. Default 1 s.
	MaxRunTime time.Duration
	// MaxSchemaBytes bounds a schema's text; a larger one is not compiled
	// and its calls are reported unchecked. Default 256 KiB.
	MaxSchemaBytes int
	// CachedSchemas and CachedVerdicts bound the validator's caches of
	// compiled schemas (by the hash of their text) and of verdicts (by
	// the hashes of schema and arguments). Defaults 1,024 and 65,536.
	CachedSchemas  int
	CachedVerdicts int
}

// DefaultMaxValidationSteps is ValidationLimits.MaxSteps unless set: a
// real tool schema and its arguments take tens to a few thousand visits;
// 200,000 take the validator about 0.1 s on one core, and counting them
// (what a refusal costs) about 20 ms (BenchmarkValidateChain).
const DefaultMaxValidationSteps = 200000

// DefaultValidationLimits are the limits unless configured.
func DefaultValidationLimits() ValidationLimits {
	return ValidationLimits{MaxSteps: DefaultMaxValidationSteps, MaxRunTime: time.Second, MaxSchemaBytes: 256 << 10,
		CachedSchemas: 1024, CachedVerdicts: 65536}
}

// withDefaults fills zero fields.
func (l ValidationLimits) withDefaults() ValidationLimits {
	d := DefaultValidationLimits()
	if l.MaxSteps <= 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxRunTime <= 0 {
		l.MaxRunTime = d.MaxRunTime
	}
	if l.MaxSchemaBytes <= 0 {
		l.MaxSchemaBytes = d.MaxSchemaBytes
	}
	if l.CachedSchemas <= 0 {
		l.CachedSchemas = d.CachedSchemas
	}
	if l.CachedVerdicts <= 0 {
		l.CachedVerdicts = d.CachedVerdicts
	}
	return l
}

// Validator checks tool arguments against offered schemas within
// ValidationLimits. It keeps compiled schemas and verdicts by hash, so a
// run reviewed again (by the alert evaluator every minute, or a page)
// costs a lookup per call, and a schema too complex to check is found so
// once. It is safe for concurrent use; one serves a process.
type Validator struct {
	limits   ValidationLimits
	schemas  *lru.Cache[[32]byte, compiledSchema]
	verdicts *lru.Cache[[64]byte, verdict]
	mu       sync.Mutex // compiles one schema at a time
}

// compiledSchema is a schema text compiled, or why it was not.
type compiledSchema struct {
	schema *jsonschema.Schema // nil: nothing to check against
	skip   string             // why the schema checks nothing: too large, ...
}

// verdict is the outcome of one validation.
type verdict struct {
	notJSON   bool   // the arguments are not JSON
	violation string // "" when valid
	unchecked string // "" when checked
}

// NewValidator makes a validator with limits (zero fields: defaults).
func NewValidator(limits ValidationLimits) *Validator {
	l := limits.withDefaults()
	schemas, _ := lru.New[[32]byte, compiledSchema](l.CachedSchemas) // only a size ≤ 0 fails
	verdicts, _ := lru.New[[64]byte, verdict](l.CachedVerdicts)
	return &Validator{limits: l, schemas: schemas, verdicts: verdicts}
}

// compiled is the compiled form of a schema text, from the cache.
func (v *Validator) compiled(text string) compiledSchema {
	key := sha256.Sum256([]byte(text))
	if c, ok := v.schemas.Get(key); ok {
		return c
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok := v.schemas.Get(key); ok {
		return c
	}
	var c compiledSchema
	if len(text) > v.limits.MaxSchemaBytes {
		c.skip = fmt.Sprintf("its schema is %d bytes, over the limit of %d", len(text), v.limits.MaxSchemaBytes)
	} else {
		c.schema = compileStrict(text)
	}
	v.schemas.Add(key, c)
	return c
}

// check validates args against the schema text ("" for a tool offered
// without one, whose arguments need only be JSON): whether they are JSON,
// a violation, or why they were not checked. A verdict found before is
// answered from the cache; otherwise the arguments are decoded, and
// validated only while the run's time budget lasts (inTime), since a
// verdict the budget cut short is not kept.
func (v *Validator) check(text, args string, inTime bool) verdict {
	var key [64]byte
	sk, ak := sha256.Sum256([]byte(text)), sha256.Sum256([]byte(args))
	copy(key[:32], sk[:])
	copy(key[32:], ak[:])
	if out, ok := v.verdicts.Get(key); ok {
		return out
	}
	var out verdict
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	switch {
	case err != nil:
		out.notJSON = true
	case text == "":
	case !inTime:
		return verdict{unchecked: fmt.Sprintf("the run's validation time of %s ran out", v.limits.MaxRunTime)}
	default:
		c := v.compiled(text)
		switch {
		case c.skip != "":
			out.unchecked = c.skip
		case c.schema == nil:
			// a schema the validator cannot compile checks nothing
		case !withinSteps(c.schema, inst, v.limits.MaxSteps):
			out.unchecked = fmt.Sprintf("its schema and these arguments take more than %d validation steps (too complex)", v.limits.MaxSteps)
		default:
			if err := c.schema.Validate(inst); err != nil {
				out.violation = firstViolation(err)
			}
		}
	}
	v.verdicts.Add(key, out)
	return out
}

// withinSteps reports whether validating inst against s visits at most
// limit (subschema, value) pairs, counting every applicator's branches
// and every reference as the validator may follow them (an upper bound:
// it stops at the limit, so the count costs at most limit steps).
func withinSteps(s *jsonschema.Schema, inst any, limit int) bool {
	c := stepCounter{left: limit}
	c.visit(s, inst)
	return c.left >= 0
}

// stepCounter counts visits down from the limit.
type stepCounter struct{ left int }

func (c *stepCounter) visit(s *jsonschema.Schema, v any) {
	if s == nil || c.left < 0 {
		return
	}
	c.left--
	for _, sub := range []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else} {
		c.visit(sub, v)
	}
	if s.DynamicRef != nil {
		c.visit(s.DynamicRef.Ref, v)
	}
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range list {
			c.visit(sub, v)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			matched := false
			if p, ok := s.Properties[k]; ok {
				c.visit(p, val)
				matched = true
			}
			for re, p := range s.PatternProperties {
				if re.MatchString(k) {
					c.visit(p, val)
					matched = true
				}
			}
			if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok && !matched {
				c.visit(ap, val)
			}
			c.visit(s.PropertyNames, k)
			c.visit(s.UnevaluatedProperties, val)
			c.visit(s.DependentSchemas[k], x)
			if dep, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
				c.visit(dep, x)
			}
		}
	case []any:
		for i, item := range x {
			switch {
			case i < len(s.PrefixItems):
				c.visit(s.PrefixItems[i], item)
			case s.Items2020 != nil:
				c.visit(s.Items2020, item)
			}
			switch items := s.Items.(type) {
			case *jsonschema.Schema:
				c.visit(items, item)
			case []*jsonschema.Schema:
				if i < len(items) {
					c.visit(items[i], item)
				} else if ai, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
					c.visit(ai, item)
				}
			}
			c.visit(s.Contains, item)
			c.visit(s.UnevaluatedItems, item)
		}
		if s.UniqueItems {
			c.left -= len(x) * len(x) / 2
		}
	case string:
		if s.ContentSchema != nil {
			c.visit(s.ContentSchema, nil)
		}
	}
}

// uncheckedReason is the reason of an unchecked_arguments signal.
func uncheckedReason(tool, why string) string {
	return "tool " + tool + "'s arguments were not checked: " + strings.TrimSpace(why)
}
