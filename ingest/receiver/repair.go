package receiver

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tallyhq/tally/ingest"
)

// The decoder refuses a whole request when one span carries an id of the
// wrong length, but OTLP wants such a span rejected through partial_success
// while the rest are kept. So when decoding fails, the receiver tries once to
// drop the spans whose trace, span, parent span or link ids have the wrong
// length, and decodes what remains. Only failed requests pay for it.

// Id sizes in bytes; an absent (empty) id is left to the normalizer.
const (
	traceIDBytes = 16
	spanIDBytes  = 8
)

// maxDroppedMessages bounds how many dropped spans the message names.
const maxDroppedMessages = 3

// droppedSpans collects the spans removed for bad ids.
type droppedSpans struct {
	count    int
	messages []string
}

func (d *droppedSpans) add(name, problem string) {
	d.count++
	if len(d.messages) < maxDroppedMessages {
		d.messages = append(d.messages, fmt.Sprintf("span (name %q): %s", truncateName(name), problem))
	}
}

func (d *droppedSpans) rejected() ingest.Rejected {
	return ingest.Rejected{Spans: d.count, Message: strings.Join(d.messages, "; ")}
}

func truncateName(name string) string {
	const maxName = 128
	if len(name) > maxName {
		return strings.ToValidUTF8(name[:maxName], "") + "…"
	}
	return name
}

// idProblem describes an id of the wrong size, or is "" when the size is
// fine (including an absent id).
func idProblem(what string, size, want int) string {
	if size == 0 || size == want {
		return ""
	}
	return fmt.Sprintf("%s has %d bytes, want %d", what, size, want)
}

// dropBadIDSpans returns body without the spans that have ids of the wrong
// length, and what was dropped. ok is false when nothing was dropped or the
// body is too malformed to tell.
func dropBadIDSpans(body []byte, format wireFormat) (repaired []byte, dropped ingest.Rejected, ok bool) {
	var d droppedSpans
	var err error
	if format == formatJSON {
		repaired, err = dropBadIDSpansJSON(body, &d)
	} else {
		repaired, err = dropBadIDSpansProto(body, &d)
	}
	if err != nil || d.count == 0 {
		return nil, ingest.Rejected{}, false
	}
	return repaired, d.rejected(), true
}

// Protobuf field numbers of the OTLP trace messages walked here.
const (
	fieldRequestResourceSpans = 1 // ExportTraceServiceRequest.resource_spans
	fieldResourceScopeSpans   = 2 // ResourceSpans.scope_spans
	fieldScopeSpans           = 2 // ScopeSpans.spans
	fieldSpanTraceID          = 1
	fieldSpanSpanID           = 2
	fieldSpanParentSpanID     = 4
	fieldSpanName             = 5
	fieldSpanLinks            = 13
	fieldLinkTraceID          = 1
	fieldLinkSpanID           = 2
)

var errMalformed = errors.New("malformed protobuf")

func dropBadIDSpansProto(body []byte, d *droppedSpans) ([]byte, error) {
	return rewriteField(body, fieldRequestResourceSpans, func(rs []byte) ([]byte, bool, error) {
		out, err := rewriteField(rs, fieldResourceScopeSpans, func(ss []byte) ([]byte, bool, error) {
			out, err := rewriteField(ss, fieldScopeSpans, func(span []byte) ([]byte, bool, error) {
				name, problem, err := inspectSpan(span)
				if err != nil {
					return nil, false, err
				}
				if problem != "" {
					d.add(name, problem)
					return nil, false, nil
				}
				return span, true, nil
			})
			return out, true, err
		})
		return out, true, err
	})
}

// rewriteField copies message b, passing the value of every length-delimited
// field numbered field through child, which may replace it or drop it (keep
// false). Other fields are copied as they are.
func rewriteField(b []byte, field protowire.Number, child func([]byte) ([]byte, bool, error)) ([]byte, error) {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, errMalformed
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, errMalformed
		}
		if num == field && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			nv, keep, err := child(v)
			if err != nil {
				return nil, err
			}
			if keep {
				out = protowire.AppendTag(out, field, protowire.BytesType)
				out = protowire.AppendBytes(out, nv)
			}
		} else {
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return out, nil
}

// inspectSpan returns a Span message's name and the problem with its ids.
func inspectSpan(b []byte) (name, problem string, err error) {
	var problems []string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", "", errMalformed
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return "", "", errMalformed
		}
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			var p string
			switch num {
			case fieldSpanTraceID:
				p = idProblem("trace id", len(v), traceIDBytes)
			case fieldSpanSpanID:
				p = idProblem("span id", len(v), spanIDBytes)
			case fieldSpanParentSpanID:
				p = idProblem("parent span id", len(v), spanIDBytes)
			case fieldSpanName:
				name = string(v)
			case fieldSpanLinks:
				p, err = linkProblem(v)
				if err != nil {
					return "", "", err
				}
			}
			if p != "" {
				problems = append(problems, p)
			}
		}
		b = b[n+m:]
	}
	return name, strings.Join(problems, ", "), nil
}

// linkProblem returns the problem with a Link message's ids.
func linkProblem(b []byte) (string, error) {
	var problems []string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", errMalformed
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return "", errMalformed
		}
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			switch num {
			case fieldLinkTraceID:
				if p := idProblem("link trace id", len(v), traceIDBytes); p != "" {
					problems = append(problems, p)
				}
			case fieldLinkSpanID:
				if p := idProblem("link span id", len(v), spanIDBytes); p != "" {
					problems = append(problems, p)
				}
			}
		}
		b = b[n+m:]
	}
	return strings.Join(problems, ", "), nil
}

// dropBadIDSpansJSON does for OTLP/JSON what dropBadIDSpansProto does for
// protobuf. Ids are hex strings; one that is not valid hex of the right
// length is a bad id. Field names are accepted in lowerCamelCase and
// snake_case, as the decoder accepts them.
func dropBadIDSpansJSON(body []byte, d *droppedSpans) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // keep numbers exactly as sent
	var req map[string]any
	if err := dec.Decode(&req); err != nil {
		return nil, err
	}
	for _, rs := range objects(req, "resourceSpans", "resource_spans") {
		for _, ss := range objects(rs, "scopeSpans", "scope_spans") {
			key, spans := field(ss, "spans")
			list, _ := spans.([]any)
			kept := list[:0]
			for _, sp := range list {
				obj, isObj := sp.(map[string]any)
				if !isObj {
					kept = append(kept, sp) // not a span: leave it to the decoder
					continue
				}
				if problem := jsonSpanProblem(obj); problem != "" {
					name, _ := obj["name"].(string)
					d.add(name, problem)
					continue
				}
				kept = append(kept, sp)
			}
			if key != "" {
				ss[key] = kept
			}
		}
	}
	return json.Marshal(req)
}

// field returns the first of keys present in obj, and its value.
func field(obj map[string]any, keys ...string) (string, any) {
	for _, k := range keys {
		if v, ok := obj[k]; ok {
			return k, v
		}
	}
	return "", nil
}

// objects returns the objects in the array under the first present key.
func objects(obj map[string]any, keys ...string) []map[string]any {
	_, v := field(obj, keys...)
	list, _ := v.([]any)
	var out []map[string]any
	for _, item := range list {
		if o, ok := item.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

// jsonSpanProblem returns the problem with a JSON span's ids.
func jsonSpanProblem(span map[string]any) string {
	var problems []string
	check := func(obj map[string]any, what string, want int, keys ...string) {
		if _, v := field(obj, keys...); v != nil {
			if p := jsonIDProblem(what, v, want); p != "" {
				problems = append(problems, p)
			}
		}
	}
	check(span, "trace id", traceIDBytes, "traceId", "trace_id")
	check(span, "span id", spanIDBytes, "spanId", "span_id")
	check(span, "parent span id", spanIDBytes, "parentSpanId", "parent_span_id")
	for _, link := range objects(span, "links") {
		check(link, "link trace id", traceIDBytes, "traceId", "trace_id")
		check(link, "link span id", spanIDBytes, "spanId", "span_id")
	}
	return strings.Join(problems, ", ")
}

// jsonIDProblem describes an id that is not "" or hex of want bytes.
func jsonIDProblem(what string, v any, want int) string {
	s, ok := v.(string)
	if !ok {
		return what + " is not a hex string"
	}
	if s == "" {
		return ""
	}
	if _, err := hex.DecodeString(s); err != nil {
		return fmt.Sprintf("%s %q is not hex", what, truncateName(s))
	}
	return idProblem(what, len(s)/2, want)
}
