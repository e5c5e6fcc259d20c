package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// outcomeWait bounds how long Send retries posting outcomes of runs tally
// does not have yet: tally acknowledges spans once they are durable, and
// stores them (and so knows the run) a moment later.
const outcomeWait = 30 * time.Second

// outcome is the body of POST /api/v1/runs/{trace_id}/outcomes.
type outcome struct {
	Name        string  `json:"name"`
	Passed      bool    `json:"passed"`
	Score       float64 `json:"score"`
	Label       string  `json:"label"`
	Explanation string  `json:"explanation"`
	Source      string  `json:"source"`
}

// outcomeOf is the evaluator's verdict on an evaluation run.
func outcomeOf(r *Run) outcome {
	o := outcome{Name: OutcomeName, Passed: r.Trial.Passed, Score: 1, Label: "pass", Source: "eval",
		Explanation: fmt.Sprintf("case %s, trial %d: the expected answer", r.Trial.Case, r.Trial.Attempt)}
	if !r.Trial.Passed {
		o.Score, o.Label = 0, "fail"
		o.Explanation = fmt.Sprintf("case %s, trial %d: the answer misses what the case expects", r.Trial.Case, r.Trial.Attempt)
	}
	return o
}

// postOutcomes posts the verdict of every evaluation run among runs to
// tally's outcomes API under cfg.Endpoint, with cfg.Headers (an ingest
// key may post outcomes), and returns how many it posted. Tally's 404 for
// a run it has not stored yet is retried for up to outcomeWait; any other
// answer but 200 is an error.
func postOutcomes(ctx context.Context, cfg Config, runs []Run) (int, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	base := strings.TrimRight(cfg.Endpoint, "/") + "/api/v1/runs/"
	deadline := time.Now().Add(outcomeWait)
	posted := 0
	for i := range runs {
		r := &runs[i]
		if r.Trial == nil {
			continue
		}
		body, err := json.Marshal(outcomeOf(r))
		if err != nil {
			return posted, fmt.Errorf("demo: encode outcome: %w", err)
		}
		target := base + url.PathEscape(r.TraceID.String()) + "/outcomes"
		for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
			status, msg, err := postJSON(ctx, client, target, cfg.Headers, body)
			if err != nil {
				return posted, fmt.Errorf("demo: post the outcome of run %s: %w", r.TraceID, err)
			}
			if status == http.StatusOK {
				posted++
				break
			}
			if !notStoredYet(status, msg) || time.Now().Add(pause).After(deadline) {
				return posted, fmt.Errorf("demo: post the outcome of run %s to %s: %d %s", r.TraceID, target, status, msg)
			}
			if err := sleepUntil(ctx, time.Now().Add(pause)); err != nil {
				return posted, err
			}
		}
	}
	return posted, nil
}

// notStoredYet says whether an answer is tally's 404 for a run it does not
// have (yet): a JSON error. Any other 404 is an endpoint without the
// outcomes API, not worth waiting for.
func notStoredYet(status int, msg string) bool {
	var e struct {
		Error string `json:"error"`
	}
	return status == http.StatusNotFound && json.Unmarshal([]byte(msg), &e) == nil && e.Error != ""
}

// postJSON posts body and returns the status and the start of the answer.
func postJSON(ctx context.Context, client *http.Client, target string, headers map[string]string, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(msg)), nil
}
