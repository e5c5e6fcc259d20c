package query

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// The reports over a window's runs (tasks, versions, comparisons, caps,
// the safety review) read every run of the window: the settled ones from
// the run table, with what settling computed of them (facts), and the
// live ones from their spans, whose facts the reports then read as before.

// runFacts is what the run table holds of a settled run beyond its
// summary: the outputs of the reads a report would otherwise make of its
// spans.
type runFacts struct {
	config   RunConfig
	steps    []safety.Step // Tool, Status and Effect set
	signals  []safety.Signal
	activeNs uint64
	waitNs   uint64
	outcomes []Outcome // the spans' own verdicts (name and passed only)
}

// windowRun is one run of a report's window; facts is nil for a live run.
type windowRun struct {
	RunSummary
	facts *runFacts
}

// eachWindowRun calls each with every run f selects, newest first (by
// start, then trace id), one at a time: a report that aggregates as it
// goes holds no more than one run. The live runs (few: in flight) are
// read first, and prepare, when set, may give them facts before any run
// is handed on; the settled ones stream from the run table with the facts
// want names. each must not keep the run it is given.
func (r *core) eachWindowRun(ctx context.Context, f RunFilter, want facts, parts runParts, prepare func(live []windowRun) error, each func(*windowRun) error) error {
	sel, err := selectRuns(r.store, f)
	if err != nil {
		return err
	}
	var lv liveSet
	if parts.lv != nil {
		lv = *parts.lv
	} else if lv, err = r.liveRuns(ctx, f.Project, f.Since); err != nil {
		return err
	}
	var live []windowRun
	if !parts.noLive {
		if live, err = r.liveWindowRuns(ctx, sel, lv, Shard{}, prepare); err != nil {
			return err
		}
	}
	next := 0 // the next live run to hand on
	if !lv.all && !parts.noSettled {
		q, args := settledFactsSQL(r.store, f.Project, sel, want, lv)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("read settled runs: %w", err)
		}
		defer rows.Close()
		var cur settledRow
		dest := cur.dest(want)
		// A window's runs share few configurations: each is read and
		// decoded once (settledConfigs), and a run brings only its
		// fingerprint and its dataset case, which the fingerprint leaves
		// out.
		var configs map[string]RunConfig
		if want.configs() {
			if configs, err = r.settledConfigs(ctx, f.Project, sel); err != nil {
				return err
			}
		}
		d := settledDecoder{want: want, configs: configs}
		// The rows come by key, newest version first (settledFactsSQL):
		// the first of a key is the run's current row, kept when it is not
		// a tombstone and matches the filters; the older versions are
		// skipped. The runs of one second are handed on newest first.
		var group []settledRow
		flush := func() error {
			slices.SortFunc(group, func(a, b settledRow) int {
				return cmp.Or(cmp.Compare(b.run.StartNs, a.run.StartNs), strings.Compare(b.run.TraceID, a.run.TraceID))
			})
			for i := range group {
				run, err := d.decode(&group[i])
				if err != nil {
					return err
				}
				for ; next < len(live) && newer(&live[next].RunSummary, &run.RunSummary) < 0; next++ {
					if err := each(&live[next]); err != nil {
						return err
					}
				}
				if err := each(run); err != nil {
					return err
				}
			}
			group = group[:0]
			return nil
		}
		var lastStart uint32
		var lastID string
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return fmt.Errorf("read settled runs: %w", err)
			}
			if cur.rowStart == lastStart && cur.run.TraceID == lastID {
				continue // an older version of the row just read
			}
			lastStart, lastID = cur.rowStart, cur.run.TraceID
			if cur.keep == 0 {
				continue
			}
			if len(group) > 0 && group[0].rowStart != cur.rowStart {
				if err := flush(); err != nil {
					return err
				}
			}
			group = append(group, cur)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read settled runs: %w", err)
		}
		if err := flush(); err != nil {
			return err
		}
	}
	for ; next < len(live); next++ {
		if err := each(&live[next]); err != nil {
			return err
		}
	}
	return nil
}

// runParts says which of a window's runs a read hands on — its live runs,
// its settled ones, or both (the zero value) — and lv, when set, is the
// window's live set already read: a report that reads a window in parts
// (windowFromRollup) reads its live runs once.
type runParts struct {
	lv                *liveSet
	noLive, noSettled bool
}

// liveWindowRuns reads the live runs (lv) sel selects, newest first (see
// newer), from their spans, and lets prepare, when set, give them facts.
// With shard.Of > 1 it reads only the runs of that part of them, by trace
// id (see liveShards).
func (r *core) liveWindowRuns(ctx context.Context, sel runSelection, lv liveSet, shard Shard, prepare func(live []windowRun) error) ([]windowRun, error) {
	if lv.none() {
		return nil, nil
	}
	live, ok, err := r.liveWindowRunsInGo(ctx, sel, lv, shard)
	if err != nil {
		return nil, err
	}
	if !ok {
		if !lv.all {
			sel = lv.narrow(sel)
		}
		if c, cargs := shard.cond(); c != "" {
			sel = sel.narrowed(c, cargs)
		}
		q, args := runSummarySQL(r.store, sel)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		found, err := scanAll(rows, (*runRow).dest)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		live = make([]windowRun, len(found))
		for i := range found {
			live[i] = windowRun{RunSummary: found[i].summary()}
		}
	}
	slices.SortFunc(live, func(a, b windowRun) int { return newer(&a.RunSummary, &b.RunSummary) })
	if prepare != nil {
		if err := prepare(live); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// settledCurrentSQL builds a subquery of the current rows (FINAL) of
// project's settled runs that sel selects and are not live (lv), under
// settledColumns' names with the run table's columns extra: for the
// reports that add up settled runs in ClickHouse instead of reading each.
// Its filters stand outside the FINAL subquery, so that an older version
// never matches in the current one's place.
func settledCurrentSQL(t tables, project string, sel runSelection, lv liveSet, extra string) (string, []any) {
	cols := settledSelectList(sel, extra)
	where, args := settledWindow(project, sel)
	cond := append([]string{"deleted = 0"}, sel.rows...)
	args = append(args, sel.rowArgs...)
	if c, cargs := lv.cond(false); c != "" {
		cond = append(cond, c)
		args = append(args, cargs...)
	}
	return "SELECT * FROM (SELECT " + cols + finalRuns(t, where) + ")\nWHERE " +
		strings.Join(cond, " AND "), args
}

// cloneInt is a copy of *p (nil for nil).
func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// settledRow is one row of the settled read (settledFactsSQL) as scanned.
type settledRow struct {
	run                                  runRow
	agents                               string
	retries, repeats                     uint64
	fingerprint, configCase              string
	signals, outcomes                    string
	stepTools, stepStatuses, stepEffects string
	activeNs, waitNs                     uint64
	keep                                 uint8  // the row is no tombstone and matches the filters
	rowStart                             uint32 // the key's start (seconds)
}

// settledField is one column of the settled read (settledFactsSQL): its
// expression over settledRunsSQL's columns, the run table's column it
// reads beyond settledColumns ("" for none), where it scans to, and the
// fact that wants it (nil: every report). A column no report of the read
// wants is not read at all, its field left zero: 117k rows of 7 days
// move through the embedded store's transport column by column, and 47
// columns (most of them zero constants) took 0.29 s where the 11 a report
// used took 0.07 s.
type settledField struct {
	expr   string
	column string
	dest   func(r *settledRow) any
	wanted func(w facts) bool
}

// settledFields are the settled read's columns: the summary's figures the
// reports use (the task, agents, times, status, calls, errors, input and
// output tokens, total cost; the others stay zero, and so do those a report
// leaves out: facts.noAgents, noCounts), the retries and repeats (unless
// noRetries), the facts, the row's filter verdict (keep) and key start.
var settledFields = []settledField{
	{expr: "trace_id", dest: func(r *settledRow) any { return &r.run.TraceID }},
	{expr: "root_name", dest: func(r *settledRow) any { return &r.run.RootName }},
	{expr: "task", dest: func(r *settledRow) any { return &r.run.Task }},
	{expr: schema.EncodedStrings("agents"), dest: func(r *settledRow) any { return &r.agents }, wanted: wantAgents},
	{expr: "s_ns", dest: func(r *settledRow) any { return &r.run.StartNs }},
	{expr: "e_ns", dest: func(r *settledRow) any { return &r.run.EndNs }},
	{expr: "n_llm", dest: func(r *settledRow) any { return &r.run.LLM }, wanted: wantCounts},
	{expr: "n_tool", dest: func(r *settledRow) any { return &r.run.Tool }, wanted: wantCounts},
	{expr: "n_err", dest: func(r *settledRow) any { return &r.run.Err }},
	{expr: "run_err", dest: func(r *settledRow) any { return &r.run.RunErr }},
	{expr: "in_t", dest: func(r *settledRow) any { return &r.run.In }, wanted: wantCounts},
	{expr: "out_t", dest: func(r *settledRow) any { return &r.run.Out }, wanted: wantCounts},
	{expr: "c_total", dest: func(r *settledRow) any { return &r.run.CTotal }},
	{expr: "n_retries", dest: func(r *settledRow) any { return &r.retries }, wanted: wantRetries},
	{expr: "n_repeats", dest: func(r *settledRow) any { return &r.repeats }, wanted: wantRetries},
	{expr: "fingerprint", column: "fingerprint", dest: func(r *settledRow) any { return &r.fingerprint }, wanted: facts.configs},
	{expr: "visitParamExtractString(config, 'case')", column: "config", dest: func(r *settledRow) any { return &r.configCase }, wanted: func(w facts) bool { return w.config }},
	{expr: schema.EncodedStrings("step_tools"), column: "step_tools", dest: func(r *settledRow) any { return &r.stepTools }, wanted: func(w facts) bool { return w.review }},
	{expr: schema.EncodedStrings("step_statuses"), column: "step_statuses", dest: func(r *settledRow) any { return &r.stepStatuses }, wanted: func(w facts) bool { return w.review }},
	{expr: schema.EncodedStrings("step_effects"), column: "step_effects", dest: func(r *settledRow) any { return &r.stepEffects }, wanted: func(w facts) bool { return w.review }},
	{expr: "signals", column: "signals", dest: func(r *settledRow) any { return &r.signals }, wanted: func(w facts) bool { return w.review }},
	{expr: "active_ns", column: "active_ns", dest: func(r *settledRow) any { return &r.activeNs }, wanted: func(w facts) bool { return w.approvals }},
	{expr: "wait_ns", column: "wait_ns", dest: func(r *settledRow) any { return &r.waitNs }, wanted: func(w facts) bool { return w.approvals }},
	{expr: schema.EncodedStrings("verdicts"), column: "verdicts", dest: func(r *settledRow) any { return &r.outcomes }, wanted: func(w facts) bool { return w.outcomes }},
}

// wantAgents, wantCounts and wantRetries want the summary's agents, its
// calls and tokens, and its retries and repeats, unless the report leaves
// them out (facts).
func wantAgents(w facts) bool  { return !w.noAgents }
func wantCounts(w facts) bool  { return !w.noCounts }
func wantRetries(w facts) bool { return !w.noRetries }

// settledFieldsFor are the settled read's columns want needs.
func settledFieldsFor(want facts) []settledField {
	var out []settledField
	for _, f := range settledFields {
		if f.wanted == nil || f.wanted(want) {
			out = append(out, f)
		}
	}
	return out
}

// dest is the scan destination in r of settledFactsSQL's columns for
// want: its fields, then keep and the key's start.
func (r *settledRow) dest(want facts) []any {
	var dest []any
	for _, f := range settledFieldsFor(want) {
		dest = append(dest, f.dest(r))
	}
	return append(dest, &r.keep, &r.rowStart)
}

// settledDecoder turns settled rows into runs with their facts. The run,
// its agents, its facts and their slices are reused from row to row: the
// run it returns is good until the next call.
type settledDecoder struct {
	want                                       facts
	configs                                    map[string]RunConfig
	run                                        windowRun
	facts                                      runFacts
	retries, repeats                           int
	agents, verdicts, tools, statuses, effects []string
}

func (d *settledDecoder) decode(x *settledRow) (*windowRun, error) {
	var err error
	if d.agents, err = schema.AppendDecodedStrings(d.agents[:0], x.agents); err != nil {
		return nil, fmt.Errorf("read settled runs: agents: %w", err)
	}
	x.run.Agents, x.run.Models = d.agents, nil
	d.run = windowRun{RunSummary: x.run.summary()}
	d.retries, d.repeats = int(x.retries), int(x.repeats)
	d.run.ToolRetries, d.run.ToolRepeats, d.run.Settled = &d.retries, &d.repeats, true
	facts := &d.facts
	*facts = runFacts{activeNs: x.activeNs, waitNs: x.waitNs, steps: facts.steps[:0], outcomes: facts.outcomes[:0]}
	if d.want.configs() {
		facts.config = d.configs[x.fingerprint]
		facts.config.Case = x.configCase // "" unless want.config
	}
	if err := decodeFact(x.signals, &facts.signals); err != nil {
		return nil, fmt.Errorf("run %s: signals: %w", d.run.TraceID, err)
	}
	if x.outcomes != "" {
		if d.verdicts, err = schema.AppendDecodedStrings(d.verdicts[:0], x.outcomes); err != nil {
			return nil, fmt.Errorf("run %s: verdicts: %w", d.run.TraceID, err)
		}
		for _, v := range d.verdicts {
			facts.outcomes = append(facts.outcomes, verdictOutcome(v))
		}
	}
	if x.stepTools != "" {
		var err1, err2, err3 error
		d.tools, err1 = schema.AppendDecodedStrings(d.tools[:0], x.stepTools)
		d.statuses, err2 = schema.AppendDecodedStrings(d.statuses[:0], x.stepStatuses)
		d.effects, err3 = schema.AppendDecodedStrings(d.effects[:0], x.stepEffects)
		if err := cmp.Or(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("run %s: steps: %w", d.run.TraceID, err)
		}
		for j := range min(len(d.tools), len(d.statuses), len(d.effects)) {
			facts.steps = append(facts.steps, safety.Step{Tool: d.tools[j], Status: safety.Status(d.statuses[j]),
				Effect: safety.Effect(d.effects[j])})
		}
	}
	d.run.facts = facts
	return &d.run, nil
}

// newer orders runs newest first: by start, then trace id, both
// descending (the settled read's ORDER BY).
func newer(a, b *RunSummary) int {
	return cmp.Or(b.Start.Compare(a.Start), strings.Compare(b.TraceID, a.TraceID))
}

// decodeFact reads a JSON column of the run table ("" is none).
func decodeFact(s string, v any) error {
	if s == "" {
		return nil
	}
	return json.Unmarshal([]byte(s), v)
}

// settledFactsSQL builds windowRuns' read of the settled runs sel selects
// that are not live: settledFields' columns for want.
func settledFactsSQL(t tables, project string, sel runSelection, want facts, lv liveSet) (string, []any) {
	fields := settledFieldsFor(want)
	var extra, cols []string
	for _, f := range fields {
		cols = append(cols, f.expr)
		if f.column != "" {
			extra = append(extra, f.column)
		}
	}
	sub, subArgs := settledRunsSQL(t, project, sel, strings.Join(extra, ", "))
	// Every version of each row is read (FINAL's merging read was half of
	// ClickHouse's time on 18.16): by key, newest first, each with whether
	// it is no tombstone and matches the filters (keep), so that the
	// reader, keeping the first of a key, never lets an older version
	// stand in for the current one. The live runs are left out whatever
	// their version.
	keep := append([]string{"deleted = 0"}, sel.rows...)
	args := append(slices.Clip(sel.rowArgs), subArgs...)
	where := ""
	if c, cargs := lv.cond(false); c != "" {
		where = "\nWHERE " + c
		args = append(args, cargs...)
	}
	return "SELECT " + strings.Join(cols, ", ") + ",\n\ttoUInt8(" + strings.Join(keep, " AND ") + ") AS keep, toUInt32(row_start) AS row_start_s FROM (" +
		sub + ")" + where + "\nORDER BY row_start_s DESC, trace_id DESC, row_version DESC", args
}

// settledConfigs reads the configurations of the settled runs sel's
// window holds, once per fingerprint (their dataset case left out: it is
// not part of the fingerprint, and each run brings its own).
func (r *core) settledConfigs(ctx context.Context, project string, sel runSelection) (map[string]RunConfig, error) {
	q, args := settledConfigsSQL(r.store, project, sel)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read configurations: %w", err)
	}
	defer rows.Close()
	out := map[string]RunConfig{}
	for rows.Next() {
		var fp, text string
		if err := rows.Scan(&fp, &text); err != nil {
			return nil, fmt.Errorf("read configurations: %w", err)
		}
		var c RunConfig
		if err := decodeFact(text, &c); err != nil {
			return nil, fmt.Errorf("configuration %s: %w", fp, err)
		}
		c.Case = ""
		out[fp] = c
	}
	return out, rows.Err()
}

// settledConfigsSQL builds settledConfigs' statement: one configuration
// of each fingerprint among the window's settled rows (any: all of a
// fingerprint's configurations are equal but for the case).
func settledConfigsSQL(t tables, project string, sel runSelection) (string, []any) {
	where, args := settledWindow(project, sel)
	return "SELECT fingerprint, any(config) FROM " + t.Table(schema.TableRuns) + where + " AND deleted = 0 GROUP BY fingerprint", args
}

// settledCases reads the dataset cases of project's settled runs ids,
// which start at the given seconds (a key lookup): what a report that
// read only the fingerprints (facts.fingerprint) needs of a few runs.
// A run settled again since is left out.
func (r *core) settledCases(ctx context.Context, project string, starts []uint32, ids []string) (map[string]string, error) {
	out := map[string]string{}
	err := r.eachKeyChunk(starts, ids, func(starts []uint32, ids []string) error {
		q, args := settledCasesSQL(r.store, project, starts, ids)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("read dataset cases: %w", err)
		}
		found, err := scanAll(rows, func(c *[2]string) []any { return []any{&c[0], &c[1]} })
		if err != nil {
			return fmt.Errorf("read dataset cases: %w", err)
		}
		for _, c := range found {
			out[c[0]] = c[1]
		}
		return nil
	})
	return out, err
}

// settledRunConfigs reads the configurations (their cases included) of
// project's settled runs ids, which start at the given seconds (a key
// lookup), by rowKey: a version's newest run's, for a report that read
// the run rollup.
func (r *core) settledRunConfigs(ctx context.Context, project string, starts []uint32, ids []string) (map[rowKey]RunConfig, error) {
	out := map[rowKey]RunConfig{}
	err := r.eachKeyChunk(starts, ids, func(starts []uint32, ids []string) error {
		q, args := settledRunConfigsSQL(r.store, project, starts, ids)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("read configurations: %w", err)
		}
		type configRow struct {
			key  rowKey
			text string
		}
		found, err := scanAll(rows, func(x *configRow) []any { return []any{&x.key.traceID, &x.key.start, &x.text} })
		if err != nil {
			return fmt.Errorf("read configurations: %w", err)
		}
		for _, x := range found {
			var c RunConfig
			if err := decodeFact(x.text, &c); err != nil {
				return fmt.Errorf("run %s: configuration: %w", x.key.traceID, err)
			}
			out[x.key] = c
		}
		return nil
	})
	return out, err
}

// rowKey is a run table row's key: a trace id may have rows under more
// than one start.
type rowKey struct {
	traceID string
	start   uint32 // seconds
}

// settledRunConfigsSQL builds settledRunConfigs' statement.
func settledRunConfigsSQL(t tables, project string, starts []uint32, ids []string) (string, []any) {
	q, args := byKey(t, "trace_id, start, config, deleted, version", project, starts, ids)
	return "SELECT trace_id, toUInt32(start), config FROM " + q, args
}

// settledCasesSQL builds settledCases' statement.
func settledCasesSQL(t tables, project string, starts []uint32, ids []string) (string, []any) {
	q, args := byKey(t, "trace_id, start, config, deleted, version", project, starts, ids)
	return "SELECT trace_id, visitParamExtractString(config, 'case') FROM " + q, args
}

// liveFacts fills in what the reports need of the live runs among runs
// (those without facts) from their spans: configurations (withConfig),
// tool retries (withRetries), approvals' active time and waits
// (withApprovals).
func (r *core) liveFacts(ctx context.Context, project string, runs []*windowRun, withConfig, withRetries, withApprovals bool) error {
	var live []RunSummary
	var at []int
	for i := range runs {
		if runs[i].facts == nil {
			live = append(live, runs[i].RunSummary)
			at = append(at, i)
		}
	}
	if len(live) == 0 {
		return nil
	}
	facts := make([]runFacts, len(live))
	if withRetries {
		if err := r.addRetries(ctx, project, live); err != nil {
			return err
		}
	}
	if withConfig {
		ids, lo, hi := runsExtent(len(live), func(i int) *RunSummary { return &live[i] })
		configs, err := r.runConfigs(ctx, project, ids, lo, hi)
		if err != nil {
			return err
		}
		for i := range live {
			facts[i].config = configs[live[i].TraceID]
		}
	}
	if withApprovals {
		approvals, err := r.runApprovals(ctx, project, live)
		if err != nil {
			return err
		}
		for i := range live {
			s := &live[i]
			facts[i].activeNs = uint64(s.End.UnixNano() - s.Start.UnixNano())
			if a := approvals[s.TraceID]; len(a) > 0 {
				active, wait := safety.ActiveAndWait(a, uint64(s.Start.UnixNano()), uint64(s.End.UnixNano()))
				facts[i].activeNs, facts[i].waitNs = uint64(active), wait
			}
		}
	}
	for j, i := range at {
		runs[i].RunSummary = live[j]
		runs[i].facts = &facts[j]
	}
	return nil
}

// postedInWindow adds the latest post of each outcome of project's runs
// that started in [lo, hi] to out.
func (r *core) postedInWindow(ctx context.Context, project string, lo, hi time.Time, out map[string][]Outcome) error {
	q, args := postedInWindowSQL(r.store, project, lo, hi)
	return r.scanPosted(ctx, q, args, out)
}

// postedInWindowSQL builds postedInWindow's statement. run_start is the
// run's start when the outcome was posted: a later span may have moved
// the run's start earlier since, by at most the trace window.
func postedInWindowSQL(t tables, project string, lo, hi time.Time) (string, []any) {
	q := "SELECT trace_id, span_id, name, source, score, has_score, label, passed, explanation, created_at FROM (" +
		"SELECT * FROM " + t.Table(schema.TableOutcomes) + " WHERE project = ? AND run_start >= ? AND run_start <= ?" +
		" " + latestOf("trace_id, name, source, span_id") + ")" +
		" ORDER BY trace_id, created_at, name, source, span_id"
	return q, []any{project, lo.UTC().Truncate(time.Second), hi.UTC().Add(DefaultTraceWindow)}
}

// eachGradedRun calls each with every run f selects, newest first, with its
// verdict under outcome (RunVerdict of its outcomes), one run at a time
// (eachWindowRun): a report that aggregates as it goes holds no more than
// one run. The live runs get the
// facts want names and their outcomes from their spans before any run is
// handed on; the settled runs' posted outcomes are read once for the
// window. each must not keep the run it is given.
func (r *core) eachGradedRun(ctx context.Context, f RunFilter, outcome string, want facts, parts runParts, each func(run *windowRun, verdict *bool) error) error {
	want.outcomes = true
	var liveOutcomes map[string][]Outcome
	prepare := func(live []windowRun) error {
		ids, lo, hi := runsExtent(len(live), func(i int) *RunSummary { return &live[i].RunSummary })
		var err error
		if liveOutcomes, err = r.outcomes(ctx, f.Project, ids, lo, hi); err != nil {
			return err
		}
		ptrs := make([]*windowRun, len(live))
		for i := range live {
			ptrs[i] = &live[i]
		}
		return r.liveFacts(ctx, f.Project, ptrs, want.configs(), want.retries, want.approvals)
	}
	hi := f.Until
	if hi.IsZero() {
		hi = time.Now()
	}
	posted := map[string][]Outcome{}
	if err := r.postedInWindow(ctx, f.Project, f.Since.Add(-DefaultTraceWindow), hi, posted); err != nil {
		return err
	}
	var buf []Outcome
	return r.eachWindowRun(ctx, f, want, parts, prepare, func(run *windowRun) error {
		var outcomes []Outcome
		if run.Settled {
			buf = append(append(buf[:0], posted[run.TraceID]...), run.facts.outcomes...)
			outcomes = buf
		} else {
			outcomes = liveOutcomes[run.TraceID]
		}
		return each(run, RunVerdict(outcomes, outcome))
	})
}
