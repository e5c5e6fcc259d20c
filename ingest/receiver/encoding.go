package receiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/wire"
)

// wireFormat is the encoding of a request body, and of its answer.
type wireFormat uint8

const (
	formatUnknown     wireFormat = iota
	formatProtobuf               // application/x-protobuf
	formatProtobufStd            // application/protobuf
	formatJSON                   // application/json
)

// contentType is the media type answers in this format carry.
func (f wireFormat) contentType() string {
	switch f {
	case formatProtobuf:
		return "application/x-protobuf"
	case formatProtobufStd:
		return "application/protobuf"
	case formatJSON:
		return "application/json"
	}
	return "text/plain; charset=utf-8"
}

// formatOf is the format a Content-Type header names; its parameters (such
// as charset) are ignored.
func formatOf(contentType string) wireFormat {
	mediaType, _, _ := strings.Cut(contentType, ";")
	mediaType = strings.TrimSpace(mediaType)
	switch {
	case strings.EqualFold(mediaType, "application/x-protobuf"):
		return formatProtobuf
	case strings.EqualFold(mediaType, "application/protobuf"):
		return formatProtobufStd
	case strings.EqualFold(mediaType, "application/json"):
		return formatJSON
	}
	return formatUnknown
}

// gzipEncoded reports whether a Content-Encoding header says gzip, and
// whether the receiver supports it at all (gzip, identity, or none).
func gzipEncoded(contentEncoding string) (gzipped, supported bool) {
	enc := strings.TrimSpace(contentEncoding)
	switch {
	case enc == "", strings.EqualFold(enc, "identity"):
		return false, true
	case strings.EqualFold(enc, "gzip"), strings.EqualFold(enc, "x-gzip"):
		return true, true
	}
	return false, false
}

// decode decodes an ExportTraceServiceRequest, protobuf with dec (the
// Traces point into body and dec) and JSON with pdata. An empty body is an
// empty request. When the body fails to decode only because some spans carry ids
// of the wrong length, those spans are dropped and reported in dropped, and
// the rest is decoded. A decoder panic on hostile input is reported as a
// decode error.
func decode(body []byte, format wireFormat, maxJSONDepth int, dec *wire.Decoder) (tr wire.Traces, dropped ingest.Rejected, err error) {
	if len(body) == 0 {
		return wire.Traces{}, ingest.Rejected{}, nil
	}
	if format != formatJSON {
		if tr, err := dec.Decode(body); err == nil {
			return tr, ingest.Rejected{}, nil
		}
	}
	td, dropped, err := decodePdata(body, format, maxJSONDepth)
	if err != nil {
		return wire.Traces{}, ingest.Rejected{}, err
	}
	return wire.FromPdata(td), dropped, nil
}

// decodePdata is decode with pdata, repairing bad ids.
func decodePdata(body []byte, format wireFormat, maxJSONDepth int) (td ptrace.Traces, dropped ingest.Rejected, err error) {
	name := "protobuf"
	if format == formatJSON {
		name = "JSON"
		if jsonNestingExceeds(body, maxJSONDepth) {
			return ptrace.Traces{}, ingest.Rejected{}, fmt.Errorf(
				"decode JSON ExportTraceServiceRequest: objects and arrays nest deeper than %d levels", maxJSONDepth)
		}
		// pdata's decoder stops after the first value and ignores the rest:
		// a body is one JSON value and nothing after it (json.Valid also
		// rejects trailing data, without allocating).
		if !json.Valid(body) {
			return ptrace.Traces{}, ingest.Rejected{}, errors.New(
				"decode JSON ExportTraceServiceRequest: not one valid JSON value (malformed, or data after it)")
		}
	}
	td, err = unmarshal(body, format)
	if err == nil {
		return td, ingest.Rejected{}, nil
	}
	if repaired, dropped, ok := dropBadIDSpans(body, format); ok {
		if td, err2 := unmarshal(repaired, format); err2 == nil {
			return td, dropped, nil
		}
	}
	return ptrace.Traces{}, ingest.Rejected{}, fmt.Errorf("decode %s ExportTraceServiceRequest: %w", name, err)
}

// unmarshal runs the pdata decoder, turning a panic into an error.
func unmarshal(body []byte, format wireFormat) (td ptrace.Traces, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("malformed input (decoder panic: %v)", v)
		}
	}()
	req := ptraceotlp.NewExportRequest()
	if format == formatJSON {
		err = req.UnmarshalJSON(body)
	} else {
		err = req.UnmarshalProto(body)
	}
	if err != nil {
		return ptrace.Traces{}, err
	}
	return req.Traces(), nil
}

// jsonNestingExceeds reports whether objects and arrays in b nest deeper than
// limit, ignoring brackets inside strings. It bounds the recursion of the
// JSON decoder, which has no depth limit of its own for attribute values.
func jsonNestingExceeds(b []byte, limit int) bool {
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// maxMessageBytes bounds the message of an error answer.
const maxMessageBytes = 1 << 10

// writeError answers a refused request with a google.rpc.Status in the
// request's format, or plain text when the format is unknown.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, format wireFormat, fail *requestError) {
	h.metrics.request(fail.status)
	h.log.LogAttrs(r.Context(), slog.LevelDebug, "otlp receiver: request refused",
		slog.Int("status", fail.status), slog.String("reason", fail.reason))

	msg := fail.message
	if len(msg) > maxMessageBytes {
		msg = strings.ToValidUTF8(msg[:maxMessageBytes], "") + "…"
	}
	hdr := w.Header()
	switch fail.status {
	case http.StatusMethodNotAllowed:
		hdr.Set("Allow", http.MethodPost)
	case http.StatusUnauthorized:
		hdr.Set("WWW-Authenticate", `Bearer realm="tally"`)
	case http.StatusRequestTimeout:
		// The rest of a body cut for arriving too slowly is never read.
		hdr.Set("Connection", "close")
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if fail.retryAfter > 0 {
			hdr.Set("Retry-After", retryAfterSeconds(fail.retryAfter))
		}
	}

	var body []byte
	var err error
	st := &spb.Status{Code: grpcCode(fail.status), Message: msg}
	switch format {
	case formatJSON:
		body, err = protojson.Marshal(st)
	case formatProtobuf, formatProtobufStd:
		body, err = proto.Marshal(st)
	default:
		body = []byte(msg + "\n")
	}
	if err != nil { // cannot happen for a Status; answer in plain text regardless
		format, body = formatUnknown, []byte(msg+"\n")
	}
	hdr.Set("Content-Type", format.contentType())
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(fail.status)
	_, _ = w.Write(body)
}

// writeSuccess answers 200 with an ExportTraceServiceResponse, its
// partial_success filled when spans were rejected.
func (h *Handler) writeSuccess(w http.ResponseWriter, format wireFormat, rejected ingest.Rejected) {
	resp := ptraceotlp.NewExportResponse()
	if rejected.Spans > 0 || rejected.Message != "" {
		msg := rejected.Message
		if msg == "" {
			msg = fmt.Sprintf("%d spans rejected as invalid", rejected.Spans)
		}
		ps := resp.PartialSuccess()
		ps.SetRejectedSpans(int64(rejected.Spans))
		ps.SetErrorMessage(msg)
	}
	var body []byte
	var err error
	if format == formatJSON {
		body, err = resp.MarshalJSON()
	} else {
		body, err = resp.MarshalProto()
	}
	if err != nil { // the spans are stored: still a success, without a body
		h.log.Error("otlp receiver: encode response", slog.Any("error", err))
		body = nil
	}
	h.metrics.request(http.StatusOK)
	hdr := w.Header()
	hdr.Set("Content-Type", format.contentType())
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// retryAfterSeconds formats d for Retry-After: whole seconds, rounded up,
// at least 1.
func retryAfterSeconds(d time.Duration) string {
	secs := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(secs, 1), 10)
}
