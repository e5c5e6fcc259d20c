package traceql

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// tokKind is a token's kind.
type tokKind int

const (
	tEOF tokKind = iota
	tWord
	tString
	tNumber
	tDuration
	tLBrace
	tRBrace
	tLParen
	tRParen
	tComma
	tPipe
	tAnd      // &&
	tOr       // ||
	tNot      // !
	tEq       // =
	tNeq      // !=
	tGt       // >
	tGte      // >=
	tLt       // <
	tLte      // <=
	tRe       // =~
	tNre      // !~ (not a regex match, or not a sibling between spansets)
	tDesc     // >>
	tAnc      // <<
	tSibling  // ~
	tNotChild // !>
	tNotDesc  // !>>
	tNotPar   // !<
	tNotAnc   // !<<
)

var tokText = map[tokKind]string{
	tEOF: "end of query", tLBrace: "{", tRBrace: "}", tLParen: "(", tRParen: ")", tComma: ",", tPipe: "|",
	tAnd: "&&", tOr: "||", tNot: "!", tEq: "=", tNeq: "!=", tGt: ">", tGte: ">=", tLt: "<", tLte: "<=",
	tRe: "=~", tNre: "!~", tDesc: ">>", tAnc: "<<", tSibling: "~", tNotChild: "!>", tNotDesc: "!>>",
	tNotPar: "!<", tNotAnc: "!<<",
}

// token is one lexeme: its kind, where it starts (a byte offset into the
// query) and, for words, strings and numbers, its text or value.
type token struct {
	kind tokKind
	pos  int
	text string // a word's text, a string's value, a number's or duration's source
	num  float64
	dur  time.Duration
}

func (t token) String() string {
	switch t.kind {
	case tWord:
		return strconv.Quote(t.text)
	case tString:
		return "string " + strconv.Quote(t.text)
	case tNumber, tDuration:
		return t.text
	}
	return strconv.Quote(tokText[t.kind])
}

// Error is a syntax or type error in a query: Pos is the byte offset of
// the offending text (0-based), so a UI can underline it.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("at %d: %s", e.Pos, e.Msg) }

func errAt(pos int, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// durationUnits are the units a duration literal may carry, longest first
// so that "ms" is not read as "m".
var durationUnits = []struct {
	suffix string
	unit   time.Duration
}{{"ns", time.Nanosecond}, {"us", time.Microsecond}, {"µs", time.Microsecond}, {"ms", time.Millisecond},
	{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour},
	{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}}

// isWordStart reports whether r starts a word (an intrinsic, a keyword,
// an attribute path such as span.gen_ai.tool.name or .attr).
func isWordStart(r rune) bool { return r == '_' || r == '.' || unicode.IsLetter(r) }

// isWordRune reports whether r continues a word: attribute names carry
// dots, colons (trace:rootName), dashes and slashes (http headers, paths).
func isWordRune(r rune) bool {
	return r == '_' || r == '.' || r == ':' || r == '-' || r == '/' || r == '@' || r == '$' || r == '#' ||
		unicode.IsLetter(r) || unicode.IsDigit(r)
}

// attrTerminators end an attribute name (besides white space).
const attrTerminators = "{}()=~!<>&|^,\""

// isAttributePath reports whether a word names an attribute.
func isAttributePath(w string) bool {
	for _, p := range []string{".", "span.", "resource.", "event."} {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

// lex splits a query into tokens, or says where it cannot.
func lex(src string) ([]token, error) {
	var out []token
	i := 0
	for i < len(src) {
		r, w := utf8.DecodeRuneInString(src[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			return nil, errAt(i, "invalid UTF-8")
		case unicode.IsSpace(r):
			i += w
			continue
		case r == '/' && strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case r == '/' && strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, errAt(i, "comment not closed")
			}
			i += 2 + end + 2
			continue
		case r == '"' || r == '`':
			s, n, err := lexString(src, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tString, pos: i, text: s})
			i += n
			continue
		case unicode.IsDigit(r) || (r == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9') ||
			(r == '-' && i+1 < len(src) && (src[i+1] >= '0' && src[i+1] <= '9' || src[i+1] == '.')):
			t, n, err := lexNumber(src, i)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			i += n
			continue
		case isWordStart(r):
			start := i
			for i < len(src) {
				r, w := utf8.DecodeRuneInString(src[i:])
				if !isWordRune(r) {
					break
				}
				i += w
			}
			if isAttributePath(src[start:i]) {
				// An attribute's name runs to a space or an operator,
				// as in Tempo: span.http.url-path, .a+b.
				for i < len(src) {
					r, w := utf8.DecodeRuneInString(src[i:])
					if unicode.IsSpace(r) || strings.ContainsRune(attrTerminators, r) {
						break
					}
					i += w
				}
			}
			word := src[start:i]
			// span."a key with spaces": a quoted attribute name.
			if strings.HasSuffix(word, ".") && i < len(src) && src[i] == '"' {
				s, n, err := lexString(src, i)
				if err != nil {
					return nil, err
				}
				word += s
				i += n
				out = append(out, token{kind: tWord, pos: start, text: word})
				continue
			}
			out = append(out, token{kind: tWord, pos: start, text: word})
			continue
		}
		k, n := lexOperator(src[i:])
		if n == 0 {
			return nil, errAt(i, "unexpected character %q", r)
		}
		out = append(out, token{kind: k, pos: i})
		i += n
	}
	return append(out, token{kind: tEOF, pos: len(src)}), nil
}

// lexOperator reads the longest operator at the start of s.
func lexOperator(s string) (tokKind, int) {
	for _, op := range []struct {
		text string
		kind tokKind
	}{
		{"!>>", tNotDesc}, {"!<<", tNotAnc}, {"&&", tAnd}, {"||", tOr}, {"!=", tNeq}, {"=~", tRe}, {"!~", tNre},
		{">>", tDesc}, {"<<", tAnc}, {">=", tGte}, {"<=", tLte}, {"!>", tNotChild}, {"!<", tNotPar},
		{"{", tLBrace}, {"}", tRBrace}, {"(", tLParen}, {")", tRParen}, {",", tComma}, {"|", tPipe},
		{"!", tNot}, {"=", tEq}, {">", tGt}, {"<", tLt}, {"~", tSibling},
	} {
		if strings.HasPrefix(s, op.text) {
			return op.kind, len(op.text)
		}
	}
	return 0, 0
}

// lexString reads a double-quoted string (Go escapes) or a backquoted raw
// string starting at src[i].
func lexString(src string, i int) (string, int, error) {
	q := src[i]
	j := i + 1
	for j < len(src) {
		switch src[j] {
		case '\\':
			if q == '"' {
				j += 2
				continue
			}
		case q:
			lit := src[i : j+1]
			if q == '`' {
				return lit[1 : len(lit)-1], len(lit), nil
			}
			s, err := strconv.Unquote(lit)
			if err != nil {
				return "", 0, errAt(i, "bad string %s: %v", lit, err)
			}
			return s, len(lit), nil
		}
		j++
	}
	return "", 0, errAt(i, "string not closed")
}

// lexNumber reads a number (-1, 2.5, .95, 1e3) or a duration (300ms, 1.5s,
// 2h) starting at src[i].
func lexNumber(src string, i int) (token, int, error) {
	j := i
	if src[j] == '-' {
		j++
	}
	for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
		j++
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') && j+1 < len(src) &&
		(src[j+1] >= '0' && src[j+1] <= '9' || (src[j+1] == '-' || src[j+1] == '+') && j+2 < len(src) && src[j+2] >= '0' && src[j+2] <= '9') {
		j += 2
		for j < len(src) && src[j] >= '0' && src[j] <= '9' {
			j++
		}
	}
	num := src[i:j]
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return token{}, 0, errAt(i, "bad number %q", num)
	}
	// A unit right after the digits makes a duration.
	k := j
	for k < len(src) && (src[k] >= 'a' && src[k] <= 'z' || strings.HasPrefix(src[k:], "µ")) {
		if strings.HasPrefix(src[k:], "µ") {
			k += len("µ")
			continue
		}
		k++
	}
	if k == j {
		if k < len(src) && isWordRune(rune(src[k])) {
			return token{}, 0, errAt(i, "bad number %q", src[i:k+1])
		}
		return token{kind: tNumber, pos: i, text: num, num: f}, j - i, nil
	}
	unit := src[j:k]
	for _, u := range durationUnits {
		if unit == u.suffix {
			if f < 0 {
				return token{}, 0, errAt(i, "negative duration %q", src[i:k])
			}
			d := f * float64(u.unit)
			if d > float64(1<<62) {
				return token{}, 0, errAt(i, "duration %q out of range", src[i:k])
			}
			return token{kind: tDuration, pos: i, text: src[i:k], num: f, dur: time.Duration(d)}, k - i, nil
		}
	}
	return token{}, 0, errAt(j, "unknown duration unit %q: want ns, us, ms, s, m, h, d or w", unit)
}
