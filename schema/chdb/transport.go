package chdb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// Transport is the ClickHouse HTTP interface in-process: an http.RoundTripper
// that runs each request on the Engine instead of sending it anywhere. Give
// it to clickhouse-go (Options.Protocol HTTP, Options.TransportFunc) and the
// client's query binding, Native encoding and decoding, batches and errors
// all work as against a server's HTTP port.
//
// What it understands of the interface: the statement in the body, or in the
// `query` parameter with the body as its data (INSERT ... FORMAT); the
// `default_format`, `database` and `param_<name>` parameters; every other
// parameter as a setting for that statement. It refuses compressed bodies
// and external tables (clickhouse-go sends neither unless asked). Errors come
// back as a server's do: status 500 and ClickHouse's "Code: N. DB::Exception"
// text, with the code in X-ClickHouse-Exception-Code.
type Transport struct {
	engine *Engine
}

// Transport returns the engine's RoundTripper.
func (e *Engine) Transport() *Transport { return &Transport{engine: e} }

// HelloQuery is what clickhouse-go's HTTP client asks first to learn the
// server, decoding the answer at its own protocol revision. The engine
// writes Native output at revision 0 only (there is no HTTP handler to
// negotiate client_protocol_version), so the transport answers this query
// itself: the engine's name, version and time zone, and revision 0, encoded
// at the revision asked. From then on the client decodes at revision 0, the
// revision the engine encodes at.
const HelloQuery = "SELECT displayName(), version(), revision(), timezone()"

// transportParams are the request parameters that are not settings.
var transportParams = map[string]bool{
	"query": true, "default_format": true, "database": true,
	"client_protocol_version": true, "query_id": true, "quota_key": true,
	"session_id": true, "session_timeout": true, "session_check": true,
	"wait_end_of_query": true, "user": true, "password": true,
	"compress": true, "decompress": true, "enable_http_compression": true,
}

// insertFormatRE splits "INSERT ... FORMAT Name" into the statement and
// the format, for the engine's streaming insert.
var insertFormatRE = regexp.MustCompile(`(?is)^\s*(.*?)\s+FORMAT\s+([A-Za-z0-9_]+)\s*$`)

var exceptionCodeRE = regexp.MustCompile(`^Code: (\d+)\.`)

// RoundTrip runs one request.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	st, err := t.statement(req)
	if err != nil {
		return failure(req, http.StatusBadRequest, "Code: 1001. DB::Exception: "+err.Error()), nil
	}
	if bytes.Equal(bytes.TrimSpace(st.SQL), []byte(HelloQuery)) {
		return t.hello(req)
	}
	res, err := t.engine.Exec(req.Context(), st)
	if err != nil {
		return failed(req, err)
	}
	body := &resultBody{res: res, r: bytes.NewReader(res.Bytes())}
	return response(req, http.StatusOK, "application/octet-stream", body, int64(len(res.Bytes()))), nil
}

// statement turns req into what Exec runs.
func (t *Transport) statement(req *http.Request) (Statement, error) {
	if enc := req.Header.Get("Content-Encoding"); enc != "" {
		return Statement{}, fmt.Errorf("compressed request bodies (%s) are not supported in-process", enc)
	}
	if ct := req.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); strings.HasPrefix(mt, "multipart/") {
			return Statement{}, errors.New("external tables are not supported in-process")
		}
	}
	params := req.URL.Query()
	if db := params.Get("database"); db != "" && db != "default" {
		// tally qualifies every table with its database: a default database
		// other than "default" would need per-connection USE, which chDB's
		// shared connections cannot give a single request.
		return Statement{}, fmt.Errorf("the embedded store's connections use database default (asked for %q)", db)
	}
	if params.Get("compress") == "1" || params.Get("decompress") == "1" {
		return Statement{}, errors.New("Native compression is not supported in-process: open the connection without Compression")
	}
	st := Statement{Format: params.Get("default_format"), Settings: map[string]string{}}
	if q := params.Get("query"); q != "" {
		m := insertFormatRE.FindStringSubmatch(q)
		if m == nil {
			return Statement{}, fmt.Errorf("a statement in the query parameter takes its data from the body: it must end in FORMAT <format> (got %q)", q)
		}
		// The body is the INSERT's data: the engine reads it in pieces as
		// it parses (Statement.Input), so a batch is never held whole.
		st.SQL, st.InputFormat, st.Input = []byte(m[1]), m[2], req.Body
		if st.Input == nil {
			st.Input = strings.NewReader("")
		}
	} else if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return Statement{}, fmt.Errorf("read request: %w", err)
		}
		st.SQL = body
	}
	for name, values := range params {
		if len(values) == 0 || transportParams[name] {
			continue
		}
		if p, ok := strings.CutPrefix(name, "param_"); ok {
			if st.Params == nil {
				st.Params = map[string]string{}
			}
			st.Params[p] = values[len(values)-1]
			continue
		}
		if name == "readonly" {
			// A session in readonly mode refuses every later SET, so the
			// connection could never be given back its settings.
			return Statement{}, errors.New("the readonly setting is not supported per statement in-process")
		}
		st.Settings[name] = values[len(values)-1]
	}
	return st, nil
}

// response is the response to req with body, n bytes long.
func response(req *http.Request, status int, contentType string, body io.ReadCloser, n int64) *http.Response {
	return &http.Response{
		Status:     strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode: status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {contentType}},
		Body:          body,
		ContentLength: n,
		Request:       req,
	}
}

// failure is the response a server gives for an error: ClickHouse's text,
// and its code in X-ClickHouse-Exception-Code.
func failure(req *http.Request, status int, text string) *http.Response {
	text += "\n"
	resp := response(req, status, "text/plain; charset=UTF-8", io.NopCloser(strings.NewReader(text)), int64(len(text)))
	if m := exceptionCodeRE.FindStringSubmatch(text); m != nil {
		resp.Header.Set("X-ClickHouse-Exception-Code", m[1])
	}
	return resp
}

// failed turns an Exec error into what a server would answer: a statement
// the engine refused or failed is a 500 with its text; anything else (the
// request's context ended, the engine closed) is the round trip's error.
func failed(req *http.Request, err error) (*http.Response, error) {
	var ce *Error
	if errors.As(err, &ce) {
		return failure(req, http.StatusInternalServerError, ce.Message), nil
	}
	return nil, err
}

// resultBody reads a Result straight from chDB's memory and frees it on Close.
type resultBody struct {
	res *Result
	r   *bytes.Reader
}

// Read reads the output, and nothing once the body is closed.
func (b *resultBody) Read(p []byte) (int, error) {
	if b.res == nil {
		return 0, io.EOF
	}
	return b.r.Read(p)
}

// Close frees the output in chDB's memory (once).
func (b *resultBody) Close() error {
	if b.res != nil {
		b.res.Close()
		b.res = nil
	}
	return nil
}

var _ http.RoundTripper = (*Transport)(nil)

// hello answers HelloQuery (see there).
func (t *Transport) hello(req *http.Request) (*http.Response, error) {
	revision, err := strconv.ParseUint(req.URL.Query().Get("client_protocol_version"), 10, 64)
	if err != nil {
		revision = 0
	}
	res, err := t.engine.Exec(req.Context(), Statement{SQL: []byte("SELECT displayName(), version(), timezone()"), Format: "TabSeparated"})
	if err != nil {
		return failed(req, err)
	}
	fields := strings.Split(strings.TrimSuffix(string(res.Bytes()), "\n"), "\t")
	res.Close()
	if len(fields) != 3 {
		return failure(req, http.StatusInternalServerError, fmt.Sprintf("Code: 1001. DB::Exception: unexpected server info %q", fields)), nil
	}
	block := proto.NewBlock()
	for _, c := range []struct{ name, typ string }{
		{"displayName()", "String"}, {"version()", "String"}, {"revision()", "UInt32"}, {"timezone()", "String"},
	} {
		if err := block.AddColumn(c.name, column.Type(c.typ)); err != nil {
			return nil, fmt.Errorf("chdb: hello block: %w", err)
		}
	}
	if err := block.Append(fields[0], fields[1], uint32(0), fields[2]); err != nil {
		return nil, fmt.Errorf("chdb: hello block: %w", err)
	}
	var buf chproto.Buffer
	if err := block.Encode(&buf, revision); err != nil {
		return nil, fmt.Errorf("chdb: hello block: %w", err)
	}
	return response(req, http.StatusOK, "application/octet-stream", io.NopCloser(bytes.NewReader(buf.Buf)), int64(len(buf.Buf))), nil
}
