// Package params parses what a request or a command line may ask for —
// time ranges and durations, trace and span ids, limits — once,
// for the API, the UI and the CLI, so that all three accept and refuse the
// same values with the same words.
package params

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxDays is the most days a time.Duration holds.
const maxDays = int64(math.MaxInt64 / int64(24*time.Hour))

// FormatDuration writes d as ParseDuration reads it: a positive whole
// number of days as "30d", anything else in Go's form ("12h0m0s", "0s").
func FormatDuration(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// ParseDuration is time.ParseDuration plus a "d" (24h) unit, written as
// decimal digits with an optional fraction ("7d", "1.5d"). Negative
// durations, and durations too long for a time.Duration, are errors.
func ParseDuration(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		// ParseFloat alone would take NaN, Inf, exponents and hex.
		whole, frac, _ := strings.Cut(n, ".")
		if whole+frac == "" || strings.Trim(whole+frac, "0123456789") != "" {
			return 0, fmt.Errorf("invalid duration %q: want days as decimal digits, like 7d or 1.5d", v)
		}
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || days > float64(maxDays) {
			return 0, fmt.Errorf("invalid duration %q: at most %dd", v, maxDays)
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q", v)
	}
	return d, nil
}

// Times a request may name: ClickHouse's DateTime holds 1970 to 2106, so
// anything outside [1970-01-01, 2100-01-01] is a mistake, not a query.
const (
	minUnix = 0
	maxUnix = 4102444800 // 2100-01-01T00:00:00Z
)

// TimeRange parses since/until values: RFC 3339 times, or durations
// relative to now ("24h", "30m", "7d"). Empty values leave the bound open.
// Times before 1970 or after 2100, and until before since, are errors.
func TimeRange(since, until string, now time.Time) (time.Time, time.Time, error) {
	s, err := ParseTime(since, now)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("since: %w", err)
	}
	u, err := ParseTime(until, now)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("until: %w", err)
	}
	if !s.IsZero() && !u.IsZero() && u.Before(s) {
		return time.Time{}, time.Time{}, fmt.Errorf("until %s is before since %s", u.Format(time.RFC3339), s.Format(time.RFC3339))
	}
	return s, u, nil
}

// ParseTime parses an RFC 3339 time or a duration before now ("24h", "7d").
// The time must lie in 1970 to 2100 (an empty value is the zero time).
func ParseTime(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		d, derr := ParseDuration(v)
		if derr != nil {
			return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration like 24h or 7d", v)
		}
		t = now.Add(-d)
	}
	if t.Before(time.Unix(minUnix, 0)) || t.After(time.Unix(maxUnix, 0)) {
		return time.Time{}, fmt.Errorf("%q is %s, outside 1970 to 2100", v, t.UTC().Format(time.RFC3339))
	}
	return t.UTC(), nil
}

var (
	traceIDRE = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)
	spanIDRE  = regexp.MustCompile(`^[0-9a-fA-F]{16}$`)
)

// TraceID checks a trace id (32 hex characters) and returns it lowercased.
func TraceID(v string) (string, error) {
	if !traceIDRE.MatchString(v) {
		return "", fmt.Errorf("trace id %q: want 32 hex characters", v)
	}
	return strings.ToLower(v), nil
}

// MinTracePrefix is the shortest trace id prefix a lookup accepts: the
// eight characters the UI shows.
const MinTracePrefix = 8

var tracePrefixRE = regexp.MustCompile(`^[0-9a-fA-F]{8,31}$`)

// TraceIDOrPrefix checks a trace id or a prefix of one (8 to 31 hex
// characters) and returns it lowercased, with prefix saying which.
func TraceIDOrPrefix(v string) (id string, prefix bool, err error) {
	switch {
	case traceIDRE.MatchString(v):
		return strings.ToLower(v), false, nil
	case tracePrefixRE.MatchString(v):
		return strings.ToLower(v), true, nil
	}
	return "", false, fmt.Errorf("trace id %q: want 32 hex characters, or the first %d or more of them", v, MinTracePrefix)
}

// SpanID checks a span id (16 hex characters) and returns it lowercased.
func SpanID(v string) (string, error) {
	if !spanIDRE.MatchString(v) {
		return "", fmt.Errorf("span id %q: want 16 hex characters", v)
	}
	if strings.Trim(v, "0") == "" {
		return "", fmt.Errorf("span id %q: all zero is no span (OpenTelemetry's invalid span id)", v)
	}
	return strings.ToLower(v), nil
}

// Limit parses a list's page size: 0 when absent, else 1 to 1000.
func Limit(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, fmt.Errorf("limit %q: want an integer from 1 to 1000", v)
	}
	return n, nil
}
