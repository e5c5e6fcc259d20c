package schema

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
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
//
// And the string columns of a row can be selected as one string (each
// value as its byte length, ':', the bytes), whose parts become the Span's
// fields without a copy: scanned column by column, each of a span's ~35
// strings costs clickhouse-go a length read byte by byte, an allocation for
// the value and another for boxing it in its scan. The packing has a fixed
// cost on the server instead: ~140 more functions to analyse, 11 ms a
// statement on ClickHouse 18.16 even when it reads no row. So a read of
// many spans packs (the settler's, a big run's) and a read of a few does
// not (SpanProjection.Unpacked): a 500-span run read 25 ms packed against
// 15 plain on 18.16, a 5,000-span run answered ~5% faster packed on both
// stores (docs/benchmarks.md). The arrays stay columns of their own:
// packing their (big) serializations too made the server's concatenation
// cost more than it spared.

// spanRead is how one spans column is selected and scanned.
type spanRead struct {
	expr   string // the SELECT expression
	column int    // index of the column in spanColumns
	field  int    // index of the Span field it fills
	kind   byte   // 0 a number or time, 'S' a string, 's' encoded []string, 'u' encoded []uint64
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
		r := spanRead{expr: c.name, column: i, field: f}
		// The type up to its default (column_keys has one).
		switch typ, _, _ := strings.Cut(c.typ, " DEFAULT "); typ {
		case "String":
			r.kind = 'S'
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

// A SpanProjection is a SELECT list over spans columns and the scan that
// reads its rows into Spans: every column (SpanSelectList, ScanSpans), or
// a run's outline (SpanOutline), whose left-out columns stay zero.
type SpanProjection struct {
	reads  []spanRead // the numbers, times and arrays (and the strings, unpacked), a column each
	packed []spanRead // the strings, in one string a row (List)
}

// projection splits reads into the scanned and the packed ones.
func projection(reads []spanRead) SpanProjection {
	var p SpanProjection
	for _, r := range reads {
		if r.kind == 'S' {
			p.packed = append(p.packed, r)
		} else {
			p.reads = append(p.reads, r)
		}
	}
	return p
}

// Unpacked is p with its strings selected and scanned a column each: the
// better choice for a read of fewer than UnpackedBelow rows.
func (p SpanProjection) Unpacked() SpanProjection {
	if len(p.packed) == 0 {
		return p
	}
	return SpanProjection{reads: append(slices.Clip(p.reads), p.packed...)}
}

// UnpackedBelow is the number of rows under which a read of spans costs
// less with its strings unpacked (Unpacked) than packed: the packing's
// fixed cost on the server (~11 ms a statement on 18.16, ~7 on the
// embedded 26.x) against the ~3–4 µs a row it spares the scan.
const UnpackedBelow = 2000

// SpanColumnsAll is the projection of every spans column, as stored.
func SpanColumnsAll() SpanProjection { return projection(spanReads) }

// List is the projection's SELECT list: the scanned columns, then the
// strings in one.
func (p SpanProjection) List() string {
	exprs := make([]string, 0, len(p.reads)+1)
	for _, r := range p.reads {
		exprs = append(exprs, r.expr)
	}
	if len(p.packed) > 0 {
		parts := make([]string, len(p.packed))
		for i, r := range p.packed {
			parts[i] = lengthPrefixed(r.expr)
		}
		exprs = append(exprs, "concat("+strings.Join(parts, ", ")+") AS span_strings")
	}
	return strings.Join(exprs, ", ")
}

// SpanSelectList is the SELECT list ScanSpans reads, in spans column order.
func SpanSelectList() string { return SpanColumnsAll().List() }

// outlineOmits are the spans columns an outline leaves out: the resource
// and links that make up, with the attributes and events (kept where
// OutlineKeep says), most of a span's bytes, and the columns a tree shows
// but no figure of a whole run reads (a kept node gets them from its whole
// row). Every column a run's summary, counted flags, subtree figures,
// retry classes, landmarks, cost confidence, review or settled row reads
// stays: the tests that hold an answer in part and a settled row to the
// whole run's figures fail when one goes.
var outlineOmits = map[string]bool{"resource_keys": true, "resource_values": true, "links_json": true,
	"kind": true, "scope_name": true, "scope_version": true, "request_model": true, "response_model": true,
	"agent_id": true, "finish_reasons": true, "ttfc_ms": true, "price_entry": true, "price_version": true,
	"column_keys": true, "ingested_at": true}

// OutlineKeep is what an outline keeps of the wide columns: the
// attributes named in Attrs, on inference spans also those starting with
// InferencePrefix, and all events of a span holding an event named Event.
// Empty fields keep nothing.
type OutlineKeep struct {
	Attrs           []string
	InferencePrefix string
	Event           string
}

// SpanOutline is the projection of a run's outline: ids, names, times,
// status, usage, cost and the few wide values keep names — what a big
// run's tree, figures and review need for all its spans, at a fraction of
// the bytes and columns; the wide columns are read for the spans an
// answer shows. keep's names are written into the SQL and must be plain
// attribute names (no quotes).
func SpanOutline(keep OutlineKeep) SpanProjection {
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
	var reads []spanRead
	for _, r := range spanReads {
		switch name := spanColumns[r.column].name; {
		case outlineOmits[name]:
			continue
		case name == "attr_keys" || name == "attr_values":
			r.expr = strings.Replace(r.expr, name, filtered[name], 1)
		case name == "event_names" || name == "event_time_ns" || name == "event_attrs":
			if keep.Event == "" {
				continue
			}
			r.expr = "if(has(event_names, '" + keep.Event + "'), " + r.expr + ", '')"
		}
		reads = append(reads, r)
	}
	return projection(reads)
}

// ScanSpans reads every row of rows, which must select SpanSelectList.
func ScanSpans(rows driver.Rows) ([]Span, error) { return SpanColumnsAll().Scan(rows, 0) }

// Scan reads every row of rows, which must select p.List(), into a slice
// made for capacity spans (the rows the caller expects), sparing a big run
// the copies of a growing slice.
func (p SpanProjection) Scan(rows driver.Rows, capacity int) ([]Span, error) {
	out := make([]Span, 0, capacity)
	dest := make([]any, len(p.reads), len(p.reads)+1)
	encoded := make([]string, len(p.reads))
	var text string
	if len(p.packed) > 0 {
		dest = append(dest, &text)
	}
	for rows.Next() {
		out = append(out, Span{})
		v := reflect.ValueOf(&out[len(out)-1]).Elem()
		for i, r := range p.reads {
			if r.kind == 0 || r.kind == 'S' {
				dest[i] = v.Field(r.field).Addr().Interface()
			} else {
				dest[i] = &encoded[i]
			}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("scan span: %w", err)
		}
		for i, r := range p.reads {
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
				return nil, fmt.Errorf("scan span: column %s: %w", spanColumns[r.column].name, err)
			}
		}
		rest := text
		for _, r := range p.packed {
			var val string
			var err error
			if val, rest, err = nextEncoded(rest); err != nil {
				return nil, fmt.Errorf("scan span: column %s: %w", spanColumns[r.column].name, err)
			}
			v.Field(r.field).SetString(val)
		}
		if rest != "" {
			return nil, fmt.Errorf("scan span: %d bytes after the last string: %w", len(rest), errEncoding)
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
	return "arrayStringConcat(arrayMap(x -> " + lengthPrefixed("x") + ", " + col + "))"
}

// lengthPrefixed is the SQL expression of the string expression expr as
// one encoded value, <length>:<bytes> (nextEncoded splits it off).
func lengthPrefixed(expr string) string {
	return "concat(toString(length(" + expr + ")), ':', " + expr + ")"
}

// DecodeStrings reads a value selected with EncodedStrings.
func DecodeStrings(s string) ([]string, error) { return splitEncoded(s) }

// AppendDecodedStrings is DecodeStrings appending to dst, so that a reader
// decoding one row after another reuses one slice (the elements are
// substrings of s either way).
func AppendDecodedStrings(dst []string, s string) ([]string, error) {
	for len(s) > 0 {
		val, rest, err := nextEncoded(s)
		if err != nil {
			return dst, err
		}
		dst = append(dst, val)
		s = rest
	}
	return dst, nil
}

// nextEncoded splits the first value off "<len>:<bytes>…": the value (a
// part of s) and the rest.
func nextEncoded(s string) (val, rest string, err error) {
	n, i := 0, 0
	for ; i < len(s) && s[i] != ':'; i++ {
		c := s[i]
		if c < '0' || c > '9' || i >= 10 {
			return "", s, errEncoding
		}
		n = n*10 + int(c-'0')
	}
	if i == 0 || i == len(s) || n > len(s)-i-1 {
		return "", s, errEncoding
	}
	return s[i+1 : i+1+n], s[i+1+n:], nil
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
