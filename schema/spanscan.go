package schema

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Reading spans through clickhouse-go's Select costs a reflective struct
// mapping per row and, worse, a reflective append per array element: for a
// 500-span run that was 8 of the ~20 ms tally spent answering. SpanSelectList
// and ScanSpans read the same rows with the arrays serialized by ClickHouse
// into one string each (every element as its byte length, ':', the bytes;
// numbers comma-separated), which scans as a plain string and splits here
// without reflection.

// spanRead is how one spans column is selected and scanned.
type spanRead struct {
	expr  string // the SELECT expression
	field int    // index of the Span field it fills
	kind  byte   // 0 plain, 's' encoded []string, 'u' encoded []uint64
}

// spanReads follows spanColumns; built once from the ch tags of Span.
var spanReads = func() []spanRead {
	fields := map[string]int{}
	t := reflect.TypeFor[Span]()
	for i := range t.NumField() {
		fields[t.Field(i).Tag.Get("ch")] = i
	}
	out := make([]spanRead, len(spanColumns))
	for i, c := range spanColumns {
		f, ok := fields[c.name]
		if !ok {
			panic("schema: spans column " + c.name + " has no Span field")
		}
		r := spanRead{expr: c.name, field: f}
		switch c.typ {
		case "Array(String)":
			r.kind = 's'
			r.expr = EncodedStrings(c.name)
		case "Array(UInt64)":
			r.kind = 'u'
			r.expr = "arrayStringConcat(arrayMap(x -> toString(x), " + c.name + "), ',')"
		}
		out[i] = r
	}
	return out
}()

// SpanSelectList is the SELECT list ScanSpans reads, in spans column order.
func SpanSelectList() string {
	exprs := make([]string, len(spanReads))
	for i, r := range spanReads {
		exprs[i] = r.expr
	}
	return strings.Join(exprs, ", ")
}

// outlineOmits are the wide spans columns SpanOutlineList leaves empty:
// the resource and events that make up, with the attributes (kept for
// tool spans only), most of a span's bytes.
var outlineOmits = map[string]bool{"resource_keys": true,
	"resource_values": true, "event_names": true, "event_time_ns": true, "event_attrs": true, "links_json": true}

// OutlineKeep is what an outline keeps of the wide columns of spans that
// are not tool spans (whose attributes it keeps whole): the attributes
// named in Attrs, on inference spans also those starting with
// InferencePrefix, and all events of a span holding an event named Event.
// Empty fields keep nothing.
type OutlineKeep struct {
	Attrs           []string
	InferencePrefix string
	Event           string
}

// SpanOutlineList is SpanSelectList with the wide columns (attributes —
// but a tool span's and those keep names —, resource, events — but keep's
// —, links) selected as empty values, so that ScanSpans reads a run's
// outline — ids, names, times, status, usage, cost — at a fraction of the
// bytes: what a big run's tree needs for all its spans, the wide columns
// being read for the spans an answer shows. keep's names are written into
// the SQL and must be plain attribute names (no quotes).
func SpanOutlineList(keep OutlineKeep) string {
	cond := "0"
	if len(keep.Attrs) > 0 {
		cond = "has(['" + strings.Join(keep.Attrs, "', '") + "'], k)"
	}
	if keep.InferencePrefix != "" {
		cond += " OR (span_type = 'inference' AND startsWith(k, '" + keep.InferencePrefix + "'))"
	}
	filtered := map[string]string{
		"attr_keys":   "arrayFilter(k -> " + cond + ", attr_keys)",
		"attr_values": "arrayFilter((v, k) -> " + cond + ", attr_values, attr_keys)",
	}
	exprs := make([]string, len(spanReads))
	for i, r := range spanReads {
		exprs[i] = r.expr
		switch name := spanColumns[i].name; {
		case name == "attr_keys" || name == "attr_values":
			// Tool spans keep their attributes: their effect class and
			// terminal status are read from them for the whole run.
			exprs[i] = "if(span_type = 'tool', " + r.expr + ", " + strings.Replace(r.expr, name, filtered[name], 1) + ") AS outlined_" + name
		case keep.Event != "" && (name == "event_names" || name == "event_time_ns" || name == "event_attrs"):
			exprs[i] = "if(has(event_names, '" + keep.Event + "'), " + r.expr + ", '') AS outlined_" + name
		case outlineOmits[name]:
			exprs[i] = "'' AS omitted_" + name
		}
	}
	return strings.Join(exprs, ", ")
}

// ScanSpans reads every row of rows, which must select SpanSelectList or
// SpanOutlineList.
func ScanSpans(rows driver.Rows) ([]Span, error) { return ScanSpansCap(rows, 0) }

// ScanSpansCap is ScanSpans into a slice made for capacity spans (the rows
// the caller expects), sparing a big run the copies of a growing slice.
func ScanSpansCap(rows driver.Rows, capacity int) ([]Span, error) {
	out := make([]Span, 0, capacity)
	dest := make([]any, len(spanReads))
	encoded := make([]string, len(spanReads))
	for rows.Next() {
		out = append(out, Span{})
		v := reflect.ValueOf(&out[len(out)-1]).Elem()
		for i, r := range spanReads {
			if r.kind == 0 {
				dest[i] = v.Field(r.field).Addr().Interface()
			} else {
				dest[i] = &encoded[i]
			}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("scan span: %w", err)
		}
		for i, r := range spanReads {
			var err error
			switch r.kind {
			case 's':
				var ss []string
				ss, err = splitEncoded(encoded[i])
				v.Field(r.field).Set(reflect.ValueOf(ss))
			case 'u':
				var us []uint64
				us, err = splitNumbers(encoded[i])
				v.Field(r.field).Set(reflect.ValueOf(us))
			}
			if err != nil {
				return nil, fmt.Errorf("scan span: column %s: %w", spanColumns[i].name, err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read spans: %w", err)
	}
	return out, nil
}

var errEncoding = errors.New("malformed array encoding")

// EncodedStrings is the SQL expression that selects the Array(String)
// expression col as one string, each element as <length>:<bytes>, for
// DecodeStrings: clickhouse-go scans an Array column through reflection,
// an allocation and a boxing per element, which dominates reads of many
// rows with arrays; one string a row costs a fraction of it.
func EncodedStrings(col string) string {
	return "arrayStringConcat(arrayMap(x -> concat(toString(length(x)), ':', x), " + col + "))"
}

// DecodeStrings reads a value selected with EncodedStrings.
func DecodeStrings(s string) ([]string, error) { return splitEncoded(s) }

// AppendDecodedStrings is DecodeStrings appending to dst, so that a reader
// decoding one row after another reuses one slice (the elements are
// substrings of s either way).
func AppendDecodedStrings(dst []string, s string) ([]string, error) {
	for len(s) > 0 {
		colon := strings.IndexByte(s, ':')
		if colon <= 0 {
			return dst, errEncoding
		}
		n, err := strconv.Atoi(s[:colon])
		if err != nil || n < 0 || n > len(s)-colon-1 {
			return dst, errEncoding
		}
		dst = append(dst, s[colon+1:colon+1+n])
		s = s[colon+1+n:]
	}
	return dst, nil
}

// splitEncoded splits "<len>:<bytes><len>:<bytes>…" (empty: no elements).
func splitEncoded(s string) ([]string, error) {
	out, err := AppendDecodedStrings([]string{}, s)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// splitNumbers splits "1,2,3" (empty: no elements).
func splitNumbers(s string) ([]uint64, error) {
	if s == "" {
		return []uint64{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]uint64, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return nil, errEncoding
		}
		out[i] = n
	}
	return out, nil
}
