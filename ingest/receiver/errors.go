package receiver

import (
	"fmt"
	"net/http"
	"time"
)

// RetryError is an error a Sink (or an Authenticator) returns to refuse a
// request for now: the receiver answers Status with a Retry-After header, so
// that exporters back off and resend. Busy and Unavailable build one.
type RetryError struct {
	Status int           // http.StatusTooManyRequests or http.StatusServiceUnavailable; anything else means 503
	After  time.Duration // the wait to send in Retry-After; 0 means Config.RetryAfter
	Err    error         // the cause; its text is sent to the client
}

// Busy returns a RetryError answered 429 Too Many Requests: tally is
// shedding load (e.g. its durable log is full) and the client should slow
// down.
func Busy(after time.Duration, err error) *RetryError {
	return &RetryError{Status: http.StatusTooManyRequests, After: after, Err: err}
}

// Unavailable returns a RetryError answered 503 Service Unavailable: tally
// cannot store spans at the moment (e.g. its storage is down).
func Unavailable(after time.Duration, err error) *RetryError {
	return &RetryError{Status: http.StatusServiceUnavailable, After: after, Err: err}
}

// Error describes the refusal.
func (e *RetryError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s; retry later", http.StatusText(e.HTTPStatus()))
	}
	return fmt.Sprintf("%v; retry later", e.Err)
}

// Unwrap returns the cause.
func (e *RetryError) Unwrap() error { return e.Err }

// HTTPStatus is the status the receiver answers: 429 or 503.
func (e *RetryError) HTTPStatus() int {
	if e.Status == http.StatusTooManyRequests {
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// RetryAfter is the wait to send in Retry-After (0: the receiver's default).
func (e *RetryError) RetryAfter() time.Duration { return e.After }

// requestError is the answer to a request that is refused.
type requestError struct {
	status     int
	message    string        // sent to the client; not logged, as decoder messages may quote the body
	reason     string        // a short fixed label for logs
	retryAfter time.Duration // sent as Retry-After with 429 and 503
}

// validErrorStatus reports whether an error may choose status as its answer.
func validErrorStatus(status int) bool {
	return status >= 400 && status <= 599
}

// gRPC status codes (google.golang.org/grpc/codes) carried in the
// google.rpc.Status of an error answer, as the Collector maps them.
const (
	codeInvalidArgument   = 3
	codeDeadlineExceeded  = 4
	codeNotFound          = 5
	codePermissionDenied  = 7
	codeResourceExhausted = 8
	codeUnimplemented     = 12
	codeInternal          = 13
	codeUnavailable       = 14
	codeUnauthenticated   = 16
)

// grpcCode is the gRPC code matching an HTTP error status.
func grpcCode(status int) int32 {
	switch status {
	case http.StatusUnauthorized:
		return codeUnauthenticated
	case http.StatusForbidden:
		return codePermissionDenied
	case http.StatusNotFound:
		return codeNotFound
	case http.StatusMethodNotAllowed:
		return codeUnimplemented
	case http.StatusTooManyRequests:
		return codeResourceExhausted
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return codeUnavailable
	case http.StatusGatewayTimeout:
		return codeDeadlineExceeded
	}
	if status >= 500 {
		return codeInternal
	}
	return codeInvalidArgument
}
