package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// apiClient talks to a running tally's JSON API: the CLI shows exactly the
// figures the API and UI show.
type apiClient struct {
	server string
	key    string
	http   *http.Client
}

// clientFlags adds --server and --key to a command; TALLY_SERVER and
// TALLY_KEY (or tally.yaml) apply through the usual layering.
func clientFlags(cmd *cobra.Command) (*apiClient, func() error) {
	c := &apiClient{http: &http.Client{Timeout: 60 * time.Second}}
	cmd.Flags().StringVar(&c.server, "server", "http://127.0.0.1:4318", "tally server URL")
	cmd.Flags().StringVar(&c.key, "key", "", "API key with read scope (Authorization: Bearer)")
	return c, configFlag(cmd)
}

// get fetches path (with query values) into out, or returns the API's error.
func (c *apiClient) get(ctx context.Context, path string, q url.Values, out any) error {
	return c.do(ctx, http.MethodGet, path, q, nil, out)
}

// post sends in as JSON to path and decodes the answer into out.
func (c *apiClient) post(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, path, nil, b, out)
}

// do sends one request and decodes a 200 answer into out (a
// *json.RawMessage takes it as is), or returns the API's error.
func (c *apiClient) do(ctx context.Context, method, path string, q url.Values, body []byte, out any) error {
	u := strings.TrimRight(c.server, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%s %s: %w (is tally running there? start it with 'tally serve', or point --server or TALLY_SERVER at it)", method, u, err)
		}
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error    string
			Position *int
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return &apiError{status: resp.Status, msg: e.Error, position: e.Position}
		}
		return fmt.Errorf("%s %s: %s", method, u, resp.Status)
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = body
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode %s: %w", u, err)
	}
	return nil
}

// apiError is an API answer's error: its status, message and, for a
// query that does not parse, the position of the offending text.
type apiError struct {
	status   string
	msg      string
	position *int
}

func (e *apiError) Error() string { return e.status + ": " + e.msg }

// readCmd makes cmd a read command: the skeleton every command that shows
// one GET of the API shares, so that a command is its flags, its request
// and its table. It adds --server, --key and --config (clientFlags) and
// --json. When cmd runs, it applies the configuration, GETs the path and
// query that request builds from the flags and the arguments, and prints
// the API's JSON as it came with --json, else the answer decoded into a T
// as render writes it.
func readCmd[T any](cmd *cobra.Command, request func(args []string) (path string, q url.Values), render func(w io.Writer, rep T) error) *cobra.Command {
	c, apply := clientFlags(cmd)
	var asJSON bool
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := apply(); err != nil {
			return err
		}
		path, q := request(args)
		var rep T
		if done, err := getOrPrint(cmd, c, path, q, asJSON, &rep); done || err != nil {
			return err
		}
		return render(cmd.OutOrStdout(), rep)
	}
	return cmd
}

// getOrPrint fetches path; with asJSON it prints the API's JSON and reports
// done, else it decodes into out.
func getOrPrint(cmd *cobra.Command, c *apiClient, path string, q url.Values, asJSON bool, out any) (bool, error) {
	if asJSON {
		var raw json.RawMessage
		if err := c.get(cmd.Context(), path, q, &raw); err != nil {
			return true, err
		}
		_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
		return true, err
	}
	return false, c.get(cmd.Context(), path, q, out)
}

// rangeFlags adds --since (default def, the UI page's default) and
// --until to a report over a time range; both are passed to the API as
// given.
func rangeFlags(cmd *cobra.Command, since, until *string, def string) {
	usage := "start of the range: RFC 3339 or a duration before now (24h, 7d)"
	if def == "" {
		usage += "; default all time"
	}
	cmd.Flags().StringVar(since, "since", def, usage)
	cmd.Flags().StringVar(until, "until", "", "end of the range (default now)")
}

// queryOf is the query of the values that are set (empty ones are left
// out, so the server's defaults apply).
func queryOf(values map[string]string) url.Values {
	q := url.Values{}
	for k, v := range values {
		setIf(q, k, v)
	}
	return q
}

// setIf adds a query value when it is not empty.
func setIf(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}

// fmtDuration formats a duration in milliseconds exactly as the UI's
// fmtMs does (ui/static/lib/format.js), so a figure reads the same in the
// terminal and the browser: 0.42 ms, 8.5 ms, 87 ms, 1.23 s, 12.3 s,
// 3 min 05 s, 1 h 02 min.
func fmtDuration(ms float64) string {
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return "—"
	case ms == 0:
		return "0"
	case ms < 1:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	case ms < 1000:
		return strconv.FormatFloat(math.Round(ms), 'f', 0, 64) + " ms"
	case ms < 10000:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
	case ms < 60000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	}
	s := int64(math.Round(ms / 1000))
	if s < 3600 {
		return fmt.Sprintf("%d min %02d s", s/60, s%60)
	}
	return fmt.Sprintf("%d h %02d min", s/3600, (s%3600)/60)
}

// fmtUSD formats a cost exactly as the UI's usd() does, so a figure reads
// the same in the terminal and the browser: three significant digits below
// a dollar ($0.0031, $0.00747), cents from a dollar ($12.35), whole
// dollars with thousands separators from $1,000 ($1,234).
func fmtUSD(v float64) string {
	if v == 0 {
		return "$0"
	}
	sign, a := "$", math.Abs(v)
	if v < 0 {
		sign = "-$"
	}
	switch {
	case a >= 1000:
		return sign + thousands(int64(math.Round(a)))
	case a >= 1:
		return sign + strconv.FormatFloat(a, 'f', 2, 64)
	}
	decimals := min(12, 2-int(math.Floor(math.Log10(a))))
	s := strings.TrimRight(strconv.FormatFloat(a, 'f', decimals, 64), "0")
	return sign + strings.TrimSuffix(s, ".")
}

// thousands writes n with comma separators: 1234567 → 1,234,567.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// fmtTokens formats a token count exactly, with thousands separators, as
// the UI's num() does: 950, 12,345, 4,100,000. Token counts are what costs
// are checked against, so neither side rounds them.
func fmtTokens(n uint64) string {
	if n > math.MaxInt64 {
		return strconv.FormatUint(n, 10)
	}
	return thousands(int64(n))
}
