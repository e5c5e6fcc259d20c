package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxCallBody bounds a POST /call request body.
const maxCallBody = 16 << 20

// Error types a Server answers with, beside a recorded error's own type.
const (
	ErrorTypeUnexpectedCall = "unexpected_call" // strict player: call not in the fixture (404)
	ErrorTypeNotRecorded    = "not_recorded"    // non-strict player: call not in the fixture (404)
	ErrorTypeNotCaptured    = "result_not_captured"
	ErrorTypeBadRequest     = "bad_request"
	ErrorTypeUnknownTrace   = "unknown_trace"
)

// CallRequest is the body of POST /call.
type CallRequest struct {
	// TraceID selects the fixture; optional when the server has one.
	TraceID string `json:"trace_id,omitempty"`
	Tool    string `json:"tool"`
	// Arguments are the call's arguments: any JSON value, or a JSON string
	// holding the arguments' JSON text (as OpenTelemetry attributes carry
	// them), which is matched like Player.Call matches a Go string.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// CallResponse is the body of a POST /call answer: Result on success, Error
// otherwise (with Result too when the recorded error had one).
type CallResponse struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *CallError      `json:"error,omitempty"`
}

// Server answers tool calls over HTTP from one or more players, for agents
// not written in Go. It is safe for concurrent use.
//
//	POST /call   {"trace_id"?, "tool", "arguments"}
//	  200 {"result": …}                          the recorded result
//	  200 {"error": {"type", "message"}}         the recorded error: the replay worked, the tool failed
//	  404 {"error": {"type": "unexpected_call"|"not_recorded", "message"}}   not in the fixture
//	  409 {"error": {"type": "result_not_captured", "message"}}              recorded without result
//	  400 bad request; 404 unknown_trace
//	  an injected fault (a fixture call's "fault", WithFaults, --fault):
//	  504 fault_timeout; 429 fault_rate_limit with Retry-After; 5xx
//	  fault_server_error; 200 {"error": {"type": "unknown_tool"}}; 200
//	  {"result": "…"} for truncated and injection; X-Tally-Fault names the
//	  error faults' kind
//	GET  /report  200 Report (unmet and unexpected calls of every player)
//
// A recorded error is a 200 because the replay did what it should: a client
// tells a tool failure recorded in production (200 with "error") from a
// replay mismatch (4xx) by the status code alone.
type Server struct {
	players []*Player
	byTrace map[string]*Player
}

// NewServer returns a handler answering from players, selected by trace id.
func NewServer(players ...*Player) *Server {
	s := &Server{players: players, byTrace: make(map[string]*Player, len(players))}
	for _, p := range players {
		s.byTrace[p.TraceID()] = p
	}
	return s
}

// ServeHTTP routes /call and /report.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/call":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, ErrorTypeBadRequest, "use POST /call")
			return
		}
		s.serveCall(w, r)
	case "/report":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, ErrorTypeBadRequest, "use GET /report")
			return
		}
		s.serveReport(w)
	default:
		writeError(w, http.StatusNotFound, ErrorTypeBadRequest, "no such endpoint: use POST /call or GET /report")
	}
}

// Report merges the reports of every player, in the order they were given.
func (s *Server) Report() Report {
	reports := make([]Report, len(s.players))
	for i, p := range s.players {
		reports[i] = p.Report()
	}
	return mergeReports(reports...)
}

func (s *Server) serveReport(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, s.Report())
}

func (s *Server) serveCall(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCallBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, ErrorTypeBadRequest, fmt.Sprintf("read body: %v", err))
		return
	}
	var req CallRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, ErrorTypeBadRequest, fmt.Sprintf("decode request: %v", err))
		return
	}
	// One JSON value and nothing after it: trailing data is a malformed
	// request, not something to ignore.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, ErrorTypeBadRequest, "decode request: data after the JSON object")
		return
	}
	if req.Tool == "" {
		writeError(w, http.StatusBadRequest, ErrorTypeBadRequest, `"tool" is required`)
		return
	}
	p, status, msg := s.pick(req.TraceID)
	if p == nil {
		typ := ErrorTypeUnknownTrace
		if status == http.StatusBadRequest {
			typ = ErrorTypeBadRequest
		}
		writeError(w, status, typ, msg)
		return
	}

	var args any = []byte(req.Arguments)
	if req.Arguments == nil {
		args = nil
	} else {
		var text string
		if err := json.Unmarshal(req.Arguments, &text); err == nil {
			args = text
		}
	}
	result, err := p.Call(r.Context(), req.Tool, args)
	var (
		recorded   *RecordedError
		unexpected *UnexpectedCallError
		fault      *FaultError
	)
	switch {
	case errors.As(err, &fault):
		w.Header().Set("X-Tally-Fault", fault.Kind)
		if fault.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(fault.RetryAfter/time.Second)))
		}
		if fault.Kind == FaultUnknownTool {
			// The dispatcher answered: the replay worked, the tool is unknown.
			writeJSON(w, http.StatusOK, CallResponse{Error: &CallError{Type: fault.Kind, Message: fault.Error()}})
			return
		}
		writeError(w, fault.Status, "fault_"+fault.Kind, fault.Error())
	case err == nil:
		writeJSON(w, http.StatusOK, CallResponse{Result: result})
	case errors.As(err, &recorded):
		writeJSON(w, http.StatusOK, CallResponse{
			Result: recorded.Result,
			Error:  &CallError{Type: recorded.Type, Message: recorded.Message},
		})
	case errors.As(err, &unexpected):
		writeError(w, http.StatusNotFound, ErrorTypeUnexpectedCall, unexpected.Error())
	case errors.Is(err, ErrNotRecorded):
		writeError(w, http.StatusNotFound, ErrorTypeNotRecorded, err.Error())
	case errors.Is(err, ErrResultNotCaptured):
		writeError(w, http.StatusConflict, ErrorTypeNotCaptured, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

// pick finds the player for traceID; with one player an empty id means it.
func (s *Server) pick(traceID string) (*Player, int, string) {
	if traceID == "" {
		if len(s.players) == 1 {
			return s.players[0], 0, ""
		}
		ids := make([]string, 0, len(s.byTrace))
		for id := range s.byTrace {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return nil, http.StatusBadRequest, fmt.Sprintf(`"trace_id" is required: serving %d fixtures (%s)`, len(s.players), strings.Join(ids, ", "))
	}
	if p, ok := s.byTrace[traceID]; ok {
		return p, 0, ""
	}
	return nil, http.StatusNotFound, fmt.Sprintf("no fixture for trace %s", traceID)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, CallResponse{Error: &CallError{Type: typ, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"error":{"type":"internal","message":"encode response"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
