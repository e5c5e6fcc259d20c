package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("fixture.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var s map[string]any
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("fixture.schema.json does not parse: %v", err)
	}
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", s["$schema"])
	}
	return s
}

// jsonFields returns a struct's JSON property names and the ones without
// omitempty (which the schema must list as required).
func jsonFields(t reflect.Type) (all, required []string) {
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	sort.Strings(all)
	sort.Strings(required)
	return all, required
}

func TestSchemaMatchesGoTypes(t *testing.T) {
	s := loadSchema(t)
	defs := s["$defs"].(map[string]any)
	objects := map[string]reflect.Type{
		"#":         reflect.TypeOf(Fixture{}),
		"run":       reflect.TypeOf(RunInfo{}),
		"call":      reflect.TypeOf(Call{}),
		"error":     reflect.TypeOf(CallError{}),
		"inference": reflect.TypeOf(Inference{}),
		"usage":     reflect.TypeOf(Usage{}),
		"missing":   reflect.TypeOf(MissingSummary{}),
	}
	for name, typ := range objects {
		def := s
		if name != "#" {
			d, ok := defs[name].(map[string]any)
			if !ok {
				t.Errorf("$defs.%s missing", name)
				continue
			}
			def = d
		}
		all, required := jsonFields(typ)
		var props []string
		for k := range def["properties"].(map[string]any) {
			props = append(props, k)
		}
		sort.Strings(props)
		var req []string
		for _, r := range def["required"].([]any) {
			req = append(req, r.(string))
		}
		sort.Strings(req)
		if !reflect.DeepEqual(props, all) {
			t.Errorf("%s: schema properties %v, Go %s json fields %v", name, props, typ.Name(), all)
		}
		if !reflect.DeepEqual(req, required) {
			t.Errorf("%s: schema required %v, Go %s fields without omitempty %v", name, req, typ.Name(), required)
		}
		if def["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties must be false", name)
		}
	}
}

func TestFixturesValidateAgainstSchema(t *testing.T) {
	s := loadSchema(t)
	expected, err := os.ReadFile("testdata/expected_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	// A fixture built from stored rows is byte for byte expected_fixture.json
	// (replay/recording's TestBuildMatchesHandWrittenFixture), so it
	// validates with it.
	empty, err := (&Fixture{Format: FormatV1}).MarshalDeterministic()
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string][]byte{"expected_fixture.json": expected, "empty": empty} {
		if errs := validate(s, s, decodeNumbers(t, doc), "$"); len(errs) > 0 {
			t.Errorf("%s does not validate:\n%s", name, strings.Join(errs, "\n"))
		}
	}

	invalid := []struct {
		name, doc, wantErr string
	}{
		{"wrong format", `{"format":"tally.replay/v2","run":{},"calls":[],"missing":{"arguments":[],"results":[]}}`, "$.format"},
		{"no missing", `{"format":"tally.replay/v1","run":{"trace_id":"","conversation_id":"","agent":"","task":"","service":"","started_at":"","source_version":""},"calls":[]}`, `required "missing"`},
		{"unknown key", `{"format":"tally.replay/v1","exported_at":"now","run":{"trace_id":"","conversation_id":"","agent":"","task":"","service":"","started_at":"","source_version":""},"calls":[],"missing":{"arguments":[],"results":[]}}`, `unknown property "exported_at"`},
		{"bad call", `{"format":"tally.replay/v1","run":{"trace_id":"","conversation_id":"","agent":"","task":"","service":"","started_at":"","source_version":""},"calls":[{"seq":0,"span_id":"x","started_at":"yesterday","tool":"t","args_hash":"","status":"fine","attempt":1.5,"duration_ms":1}],"missing":{"arguments":[],"results":[]}}`, "$.calls[0].seq"},
	}
	for _, tc := range invalid {
		errs := validate(s, s, decodeNumbers(t, []byte(tc.doc)), "$")
		if !strings.Contains(strings.Join(errs, "\n"), tc.wantErr) {
			t.Errorf("%s: errors %v, want one mentioning %q", tc.name, errs, tc.wantErr)
		}
	}
}

func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// validate checks v against the subset of JSON Schema 2020-12 the fixture
// schema uses: $ref (local), type, const, enum, properties, required,
// additionalProperties (false), items, minimum, minLength, pattern and
// uniqueItems. It returns one message per violation.
func validate(root, schema map[string]any, v any, at string) []string {
	if ref, ok := schema["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		return validate(root, root["$defs"].(map[string]any)[name].(map[string]any), v, at)
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	if typ, ok := schema["type"].(string); ok && !hasType(v, typ) {
		fail("want %s, got %T", typ, v)
		return errs
	}
	if c, ok := schema["const"]; ok && !reflect.DeepEqual(c, v) {
		fail("want %v, got %v", c, v)
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || reflect.DeepEqual(e, v)
		}
		if !found {
			fail("%v not in %v", v, enum)
		}
	}
	if minimum, ok := schema["minimum"].(json.Number); ok {
		m, _ := minimum.Float64()
		if n, ok := v.(json.Number); ok {
			if f, _ := n.Float64(); f < m {
				fail("%v below minimum %v", v, m)
			}
		}
	}
	if s, ok := v.(string); ok {
		if ml, ok := schema["minLength"].(json.Number); ok {
			if n, _ := ml.Int64(); int64(len([]rune(s))) < n {
				fail("shorter than %d", n)
			}
		}
		if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(s) {
			fail("%q does not match %s", s, p)
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := schema["items"].(map[string]any); ok {
			for i, e := range arr {
				errs = append(errs, validate(root, items, e, at+"["+strconv.Itoa(i)+"]")...)
			}
		}
		if schema["uniqueItems"] == true {
			for i := range arr {
				for j := i + 1; j < len(arr); j++ {
					if reflect.DeepEqual(arr[i], arr[j]) {
						fail("items %d and %d repeat", i, j)
					}
				}
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := schema["properties"].(map[string]any)
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if _, ok := obj[r.(string)]; !ok {
					fail("required %q absent", r)
				}
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if schema["additionalProperties"] == false {
					fail("unknown property %q", k)
				}
				continue
			}
			errs = append(errs, validate(root, ps, obj[k], at+"."+k)...)
		}
	}
	return errs
}

func hasType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		return ok && !strings.ContainsAny(n.String(), ".eE")
	case "null":
		return v == nil
	}
	return false
}
