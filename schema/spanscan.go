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
// into one string each (EncodedStrings: every element as its byte length,
// ':', the bytes; numbers comma-separated; or, for a few rows, the text
// form, TextStrings), which scans as a plain string and splits here
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
	expr   string // the SELECT expression (of an array: its SQL expression, encoded by sql)
	cond   string // of an array: selected only where this holds, else as no elements ("": always)
	column int    // index of the column in spanColumns
	field  int    // index of the Span field it fills
	kind   byte   // 0 a number or time, 'S' a string, 's' encoded []string, 'u' encoded []uint64
}

// sql is the read's SELECT expression: an array encoded as one string, in
// its text form when text is set (toString: no lambda to analyse, the
// better choice for a few rows) or length-prefixed (arrayMap: cheaper a
// row on the embedded 26.x engine, the better choice for many).
func (r spanRead) sql(text bool) string {
	var e string
	switch {
	case r.kind != 's' && r.kind != 'u':
		return r.expr
	case text:
		e = TextStrings(r.expr)
	case r.kind == 's':
		e = EncodedStrings(r.expr)
	default:
		e = "arrayStringConcat(arrayMap(x -> toString(x), " + r.expr + "), ',')"
	}
	if r.cond != "" {
		e = "if(" + r.cond + ", " + e + ", '')"
	}
	return e
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
		case "Array(UInt64)":
			r.kind = 'u'
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
	text   bool       // the arrays in their text form (TextStrings), not length-prefixed
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

// Unpacked is p with its strings selected and scanned a column each, and
// its arrays in their text form (TextStrings): the better choice for a
// read of fewer than UnpackedBelow rows.
func (p SpanProjection) Unpacked() SpanProjection {
	if len(p.packed) == 0 {
		return p
	}
	return SpanProjection{reads: append(slices.Clip(p.reads), p.packed...), text: true}
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
		exprs = append(exprs, r.sql(p.text))
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
			r.expr = filtered[name]
		case name == "event_names" || name == "event_time_ns" || name == "event_attrs":
			if keep.Event == "" {
				continue
			}
			r.cond = "has(event_names, '" + keep.Event + "')"
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
//
// Each row is scanned into one scratch Span whose field addresses are
// taken once, then copied out: reflection per row and column cost more
// than the copy. An array is decoded into one reused slice, then its
// elements copied into a part of a shared block of strings (a full slice
// expression of its own), instead of a slice grown element by element per
// array.
func (p SpanProjection) Scan(rows driver.Rows, capacity int) ([]Span, error) {
	out := make([]Span, 0, capacity)
	err := p.ScanEach(rows, func(sp *Span) error {
		out = append(out, *sp)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScanEach reads every row of rows, which must select p.List(), handing
// each span to each as it is read: a reader that folds the spans as they
// come (a summary run by run) holds none but those it keeps. The Span
// each is given is reused for the next row: each copies what it keeps
// (its strings and slices stay valid).
func (p SpanProjection) ScanEach(rows driver.Rows, each func(*Span) error) error {
	var sp Span
	v := reflect.ValueOf(&sp).Elem()
	dest := make([]any, len(p.reads), len(p.reads)+1)
	encoded := make([]string, len(p.reads))
	strs := make([]*[]string, len(p.reads))
	nums := make([]*[]uint64, len(p.reads))
	for i, r := range p.reads {
		switch r.kind {
		case 0, 'S':
			dest[i] = v.Field(r.field).Addr().Interface()
		case 's':
			dest[i], strs[i] = &encoded[i], v.Field(r.field).Addr().Interface().(*[]string)
		case 'u':
			dest[i], nums[i] = &encoded[i], v.Field(r.field).Addr().Interface().(*[]uint64)
		}
	}
	packed := make([]*string, len(p.packed))
	for i, r := range p.packed {
		packed[i] = v.Field(r.field).Addr().Interface().(*string)
	}
	var text string
	if len(p.packed) > 0 {
		dest = append(dest, &text)
	}
	var (
		elems []string // the array being decoded, reused
		block []string // the unused rest of the current block of elements
	)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("scan span: %w", err)
		}
		for i, r := range p.reads {
			var err error
			switch r.kind {
			case 's':
				if elems, err = AppendDecodedStrings(elems[:0], encoded[i]); err != nil {
					break
				}
				n := len(elems)
				if block == nil || n > len(block) { // never nil: an empty array reads as []string{}
					block = make([]string, max(n, 1024))
				}
				*strs[i] = block[:n:n]
				copy(*strs[i], elems)
				block = block[n:]
			case 'u':
				*nums[i], err = splitNumbers(encoded[i])
			}
			if err != nil {
				return fmt.Errorf("scan span: column %s: %w", spanColumns[r.column].name, err)
			}
		}
		rest := text
		for i, r := range p.packed {
			var err error
			if *packed[i], rest, err = nextEncoded(rest); err != nil {
				return fmt.Errorf("scan span: column %s: %w", spanColumns[r.column].name, err)
			}
		}
		if rest != "" {
			return fmt.Errorf("scan span: %d bytes after the last string: %w", len(rest), errEncoding)
		}
		if err := each(&sp); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read spans: %w", err)
	}
	return nil
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

// TextStrings is EncodedStrings in the array's text form, toString(col):
// ['a','b\'c'], each element quoted with ' and escaped with a backslash as
// ClickHouse writes quoted strings ([1,2] for an array of numbers). It needs no lambda, whose analysis
// cost ~3 ms a statement on ClickHouse 18.16 for a span read's eight
// arrays, but the embedded 26.x engine writes it slower a row (the
// versions report of 7 days: 238 → 329 ms p50 with it). So the reads of a
// few rows use it (a run's spans, SpanProjection.Unpacked), those of many
// the length-prefixed form; DecodeStrings reads either.
func TextStrings(col string) string { return "toString(" + col + ")" }

// lengthPrefixed is the SQL expression of the string expression expr as
// one encoded value, <length>:<bytes> (nextEncoded splits it off).
func lengthPrefixed(expr string) string {
	return "concat(toString(length(" + expr + ")), ':', " + expr + ")"
}

// DecodeStrings reads a value selected with EncodedStrings or TextStrings.
func DecodeStrings(s string) ([]string, error) { return splitEncoded(s) }

// AppendDecodedStrings is DecodeStrings appending to dst, so that a reader
// decoding one row after another reuses one slice (the elements without
// an escape are substrings of s). An empty s, a column a read left out,
// has no elements.
func AppendDecodedStrings(dst []string, s string) ([]string, error) {
	if s == "" {
		return dst, nil
	}
	if s[0] != '[' { // length-prefixed: it starts with a digit
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
	if len(s) < 2 || s[len(s)-1] != ']' {
		return dst, errEncoding
	}
	s = s[1 : len(s)-1]
	for len(s) > 0 {
		val, rest, err := nextQuoted(s)
		if err != nil {
			return dst, err
		}
		dst = append(dst, val)
		if rest == "" {
			break
		}
		if rest[0] != ',' || len(rest) == 1 {
			return dst, errEncoding
		}
		s = rest[1:]
	}
	return dst, nil
}

// nextQuoted splits the first quoted value off "'…','…'": the value,
// unescaped, and the rest after its closing quote.
func nextQuoted(s string) (val, rest string, err error) {
	if len(s) < 2 || s[0] != '\'' {
		return "", s, errEncoding
	}
	end := strings.IndexByte(s[1:], '\'') + 1
	if end == 0 {
		return "", s, errEncoding
	}
	if strings.IndexByte(s[1:end], '\\') < 0 {
		return s[1:end], s[end+1:], nil // no escape: the common case, no copy
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			return b.String(), s[i+1:], nil
		case '\\':
			if i++; i == len(s) {
				return "", s, errEncoding
			}
			b.WriteByte(unescaped(s[i]))
		default:
			b.WriteByte(c)
		}
	}
	return "", s, errEncoding
}

// unescaped is the byte ClickHouse's quoted-string escape \c stands for:
// \b \f \n \r \t \0 (and \a \v, which it reads too) are control
// characters; any other c (the quote, the backslash) stands for itself.
func unescaped(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case '0':
		return 0
	case 'a':
		return '\a'
	case 'v':
		return '\v'
	}
	return c
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

// splitEncoded splits a value selected with EncodedStrings or TextStrings
// ("", "[]": no elements).
func splitEncoded(s string) ([]string, error) {
	out, err := AppendDecodedStrings([]string{}, s)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// splitNumbers splits "[1,2,3]" or "1,2,3" ("[]" or "": no elements).
func splitNumbers(s string) ([]uint64, error) {
	if s != "" && s[0] == '[' {
		if len(s) < 2 || s[len(s)-1] != ']' {
			return nil, errEncoding
		}
		s = s[1 : len(s)-1]
	}
	if s == "" {
		return []uint64{}, nil
	}
	out := make([]uint64, 0, strings.Count(s, ",")+1)
	for {
		part, rest, more := strings.Cut(s, ",")
		n, err := strconv.ParseUint(part, 10, 64)
		if err != nil {
			return nil, errEncoding
		}
		out = append(out, n)
		if !more {
			return out, nil
		}
		s = rest
	}
}
