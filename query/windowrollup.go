package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tallyhq/tally/consistency"
	"github.com/tallyhq/tally/schema"
)

// A window report (tasks, caps, versions, the safety review) over many
// runs reads the run rollup for the hours it holds and the runs of the
// others (planRollup, windowFromRollup): its counts, sums, means, maxima
// and variations are exact, its percentiles within
// consistency.SketchAccuracy (Quantiles says which), and the runs it
// names (failed, over a cap) and counts over a cap are read from the runs
// of the hours that can hold them (scanHours).

// DefaultWindowExactRuns is the most runs a window report reads one by one
// (exact percentiles) unless WithWindowExactRuns says otherwise; a window
// of more reads the run rollup. Read one by one, a run costs the reports
// 1–1.3 µs (117k runs: tasks 111 ms on 18.16, 146 on the embedded store);
// from the rollup a week costs 130–210 ms whatever its runs (plan, two
// reads, the partial hours): the two meet near 150k runs.
const DefaultWindowExactRuns = 150_000

// WithWindowExactRuns sets the most runs a window report (tasks, caps,
// versions, the safety review) reads one by one (tally serve
// --window-exact-runs); a window of more reads the run rollup's hours, its
// percentiles from sketches. 0 reads the rollup for every window with a
// whole hour in it.
func WithWindowExactRuns(n int) ReaderOption { return func(r *core) { r.windowExactRuns = n } }

// Quantiles of a window report: from every run's value, or from the run
// rollup's sketches (within consistency.SketchAccuracy).
const (
	QuantilesExact  = "exact"
	QuantilesSketch = "sketch"
)

// groupClasses are one group's runs by class (schema.RunClass).
type groupClasses [6]classRuns

// sum merges the classes keep selects.
func (g *groupClasses) sum(keep func(verdict int8, failed bool) bool) classRuns {
	var out classRuns
	for c := range g {
		if keep(schema.RunClassOf(uint8(c))) {
			out.merge(&g[c])
		}
	}
	return out
}

// anyVerdict reports whether a run of the group has an outcome verdict.
func (g *groupClasses) anyVerdict() bool {
	for c := range g {
		if v, _ := schema.RunClassOf(uint8(c)); v != 0 && g[c].runs > 0 {
			return true
		}
	}
	return false
}

// hourClass is one rolled-up hour's runs of one group and class: how many
// and each measure's greatest, which say whether the hour can hold a run
// a report names.
type hourClass struct {
	hour  time.Time
	key   string
	class uint8
	runs  uint64
	max   [8]float64
}

// streamedRun is what a report keeps of a run it read one by one: enough
// to tell whether it is one the report names.
type streamedRun struct {
	traceID string
	startNs uint64
	keys    []string
	class   uint8
	v       [8]float64
}

// rolledWindow is a window's runs as a report grouped them: by class per
// group, the rolled-up hours' candidates, and the runs read one by one.
type rolledWindow struct {
	groups   map[string]*groupClasses
	rolledUp map[string]*groupClasses // the rolled-up hours' part of groups
	hourly   []hourClass
	streamed []streamedRun
	rolled   []time.Time // the hours read from the rollup, ascending
	runs     int         // the runs of the window (each once)
	filter   RunFilter   // the report's runs
	lv       *liveSet    // the window's live runs (read one by one)
	// liveConfigs are the configurations of the live runs read, by group
	// and trace id (liveConfigKey): a version's newest run may be one.
	liveConfigs map[string]RunConfig
	keyOf       func(run *windowRun) []string
}

func (w *rolledWindow) group(key string) *groupClasses { return groupIn(w.groups, key) }

func groupIn(m map[string]*groupClasses, key string) *groupClasses {
	g := m[key]
	if g == nil {
		g = &groupClasses{}
		m[key] = g
	}
	return g
}

// windowGroup is what a window report groups runs by.
type windowGroup uint8

const (
	groupTask    windowGroup = iota // the run's task
	groupAgent                      // each of the run's agents
	groupVersion                    // task and configuration fingerprint (versionKey)
)

// liveConfigKey is a live run's key in rolledWindow.liveConfigs: its
// group's and its trace id (a trace id may have more than one row, of
// different versions).
func liveConfigKey(group, traceID string) string { return group + "\x00" + traceID }

// versionKey is a version's group key: its task and fingerprint.
func versionKey(task, fingerprint string) string { return task + "\x00" + fingerprint }

// rollupPlan is how a window report reads a window: the run rollup's
// hours whose runs are as it added them up (usable), and the other parts
// of the window one by one (blocks: [from, to)), its live runs apart.
type rollupPlan struct {
	usable []hourVersion
	blocks [][2]time.Time
	lv     liveSet
}

// planRollup plans the read of the runs f selects by the run rollup's
// grain; known, when set, is the window's live set (liveRuns since
// f.Since) the caller has read already. It returns nil when the report
// should read every run one by one: the window has no whole closed hour,
// holds at most windowExactRuns runs,
// or its runs in flight cannot be told apart (the settler is off, or too
// many are live).
func (r *core) planRollup(ctx context.Context, f RunFilter, grain uint8, known *liveSet) (*rollupPlan, error) {
	if f.Since.IsZero() {
		return nil, nil
	}
	until := f.Until
	now := time.Now().UTC()
	if until.IsZero() || until.After(now) {
		until = now
	}
	first := f.Since.UTC().Truncate(time.Hour)
	if first.Before(f.Since) {
		first = first.Add(time.Hour)
	}
	end := until.Add(time.Nanosecond).UTC().Truncate(time.Hour) // the end of the last whole hour
	if !end.After(first) {
		return nil, nil
	}
	states, err := r.runHourStates(ctx, f.Project, f.Since.UTC().Truncate(time.Hour), end.Add(time.Hour))
	if err != nil {
		return nil, err
	}
	total := 0
	for _, s := range states {
		total += int(s.Runs)
	}
	if total <= r.windowExactRuns {
		return nil, nil
	}
	// The runs in flight are read from their spans (all of them: the
	// rollup holds settled runs only). A live run settled before has its
	// previous row in the run table, which the rollup may have added up:
	// the hours of those rows are read one by one, without them.
	var lv liveSet
	if known != nil {
		lv = *known
	} else if lv, err = r.liveRuns(ctx, f.Project, f.Since); err != nil {
		return nil, err
	}
	if lv.all || lv.sub != "" {
		return nil, nil
	}
	stale := map[time.Time]bool{}
	if !lv.none() {
		if stale, err = r.settledHoursOf(ctx, f.Project, f.Since.UTC().Truncate(time.Hour), end, lv.ids); err != nil {
			return nil, err
		}
	}
	records, err := r.runRollupRecords(ctx, f.Project, first, end)
	if err != nil {
		return nil, err
	}
	versions, err := r.runRollupVersions(ctx, f.Project, grain, first, end)
	if err != nil {
		return nil, err
	}
	// An hour is read from the rollup when the record of its latest rows
	// is there and its runs are in the state recorded; an hour without
	// runs needs no read at all.
	p := &rollupPlan{lv: lv}
	addBlock := func(from, to time.Time) {
		if n := len(p.blocks); n > 0 && p.blocks[n-1][1].Equal(from) {
			p.blocks[n-1][1] = to
			return
		}
		p.blocks = append(p.blocks, [2]time.Time{from, to})
	}
	if f.Since.Before(first) {
		addBlock(f.Since, first)
	}
	for h := first; h.Before(end); h = h.Add(time.Hour) {
		k := ProjectHour{f.Project, h}
		state := states[k]
		v, hasRows := versions[h]
		ok := !stale[h]
		if ok && hasRows {
			ok = false
			for _, rec := range records[k] {
				if rec.Version == v && rec.State == state {
					ok = true
				}
			}
		} else if ok {
			ok = state.Runs == 0 || slices.ContainsFunc(records[k], func(rec RunRollupRecord) bool { return rec.State == state })
		}
		switch {
		case ok && hasRows:
			p.usable = append(p.usable, hourVersion{h, v})
		case !ok:
			addBlock(h, h.Add(time.Hour))
		}
	}
	if !end.After(until) {
		addBlock(end, until.Add(time.Nanosecond))
	}
	return p, nil
}

// windowFromRollup reads the runs f selects, grouped by by, from the run
// rollup's hours whose runs are as it added them up, and one by one for
// the rest (planRollup); want names the facts the runs read one by one
// need. It returns nil when the report should read every run one by one.
func (r *core) windowFromRollup(ctx context.Context, f RunFilter, by windowGroup, want facts) (*rolledWindow, error) {
	byAgent := by == groupAgent
	if f.Agent != "" && by != groupTask {
		return nil, nil
	}
	grain := schema.RunGrainTask
	switch {
	case by == groupVersion:
		grain = schema.RunGrainVersion
	case byAgent || f.Agent != "":
		grain = schema.RunGrainAgent
	}
	plan, err := r.planRollup(ctx, f, grain, nil)
	if plan == nil || err != nil {
		return nil, err
	}
	usable, blocks, lv := plan.usable, plan.blocks, plan.lv
	w := &rolledWindow{groups: map[string]*groupClasses{}, rolledUp: map[string]*groupClasses{}, filter: f,
		liveConfigs: map[string]RunConfig{}}
	switch by {
	case groupAgent:
		w.keyOf = func(run *windowRun) []string { return run.Agents }
	case groupVersion:
		w.keyOf = func(run *windowRun) []string {
			fp := ""
			if run.facts != nil {
				fp = run.facts.config.Fingerprint
			}
			return []string{versionKey(run.Task, fp)}
		}
	default:
		w.keyOf = func(run *windowRun) []string { return []string{run.Task} }
	}
	for _, u := range usable {
		w.rolled = append(w.rolled, u.hour)
	}
	if len(usable) > 0 {
		if err := r.readRunRollup(ctx, f, grain, byAgent, usable, w); err != nil {
			return nil, err
		}
	}
	// The runs read one by one are added up by group and class as they
	// come, and kept as what tells whether a report names them.
	builders := map[string]*[6]classBuilder{}
	read := func(run *windowRun, verdict *bool) error {
		w.runs++
		s := w.streamedOf(run, verdict)
		s.keys = slices.Clone(s.keys)
		for _, k := range s.keys {
			bs := builders[k]
			if bs == nil {
				bs = &[6]classBuilder{}
				builders[k] = bs
			}
			bs[s.class].add(s.v, s.startNs, s.traceID)
		}
		w.streamed = append(w.streamed, s)
		if !run.Settled && run.facts != nil && by == groupVersion {
			w.liveConfigs[liveConfigKey(s.keys[0], run.TraceID)] = run.facts.config
		}
		return nil
	}
	// The live runs once, for the whole window (their hours are all read
	// one by one), then the settled runs of each block.
	w.lv = &lv
	if !lv.none() {
		if err := r.eachGradedRun(ctx, f, "", want, runParts{lv: &lv, noSettled: true}, read); err != nil {
			return nil, err
		}
	}
	for _, b := range blocks {
		if err := r.eachGradedRun(ctx, withRange(f, b[0], b[1]), "", want, runParts{lv: &lv, noLive: true}, read); err != nil {
			return nil, err
		}
	}
	for k, bs := range builders {
		g := w.group(k)
		for c := range bs {
			if bs[c].runs > 0 {
				x := bs[c].classRuns()
				g[c].merge(&x)
			}
		}
	}
	return w, nil
}

// streamedOf is what w keeps of run, graded by verdict (its keys are
// keyOf's, good until the next run).
func (w *rolledWindow) streamedOf(run *windowRun, verdict *bool) streamedRun {
	return streamedRun{traceID: run.TraceID, startNs: uint64(run.Start.UnixNano()), keys: w.keyOf(run),
		class: schema.RunClass(gradeOf(verdict), run.Status == RunError), v: runMeasuresOf(&run.RunSummary, run.facts)}
}

// withRange is f over [from, to).
func withRange(f RunFilter, from, to time.Time) RunFilter {
	f.Since, f.Until = from, to.Add(-time.Nanosecond)
	return f
}

// hourVersion is a rolled-up hour and the version of its rows.
type hourVersion struct {
	hour    time.Time
	version uint64
}

// settledHoursOf reads the hours in [from, to) of project's run table
// rows (any version) of the runs ids.
func (r *core) settledHoursOf(ctx context.Context, project string, from, to time.Time, ids []string) (map[time.Time]bool, error) {
	q := "SELECT DISTINCT toUInt32(toStartOfHour(start)) FROM " + r.store.Table(schema.TableRuns) +
		" WHERE project = ? AND start >= ? AND start < ? AND trace_id IN ?"
	rows, err := r.store.Conn().Query(ctx, q, project, from.UTC(), to.UTC(), traceSet(ids))
	if err != nil {
		return nil, fmt.Errorf("find live runs' rows: %w", err)
	}
	hours, err := scanAll(rows, func(h *uint32) []any { return []any{h} })
	if err != nil {
		return nil, fmt.Errorf("find live runs' rows: %w", err)
	}
	out := map[time.Time]bool{}
	for _, h := range hours {
		out[time.Unix(int64(h), 0).UTC()] = true
	}
	return out, nil
}

// runRollupVersions reads the latest version of each hour of project's
// run rollup rows of grain in [from, to).
func (r *core) runRollupVersions(ctx context.Context, project string, grain uint8, from, to time.Time) (map[time.Time]uint64, error) {
	q := "SELECT toUInt32(hour), max(version) FROM " + r.store.Table(schema.TableRunRollup) +
		" WHERE project = ? AND grain = ? AND hour >= ? AND hour < ? GROUP BY hour"
	rows, err := r.store.Conn().Query(ctx, q, project, grain, from.UTC(), to.UTC())
	if err != nil {
		return nil, fmt.Errorf("read run rollup versions: %w", err)
	}
	defer rows.Close()
	out := map[time.Time]uint64{}
	var h uint32
	var v uint64
	for rows.Next() {
		if err := rows.Scan(&h, &v); err != nil {
			return nil, fmt.Errorf("read run rollup versions: %w", err)
		}
		out[time.Unix(int64(h), 0).UTC()] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read run rollup versions: %w", err)
	}
	return out, nil
}

// runRollupCond is the condition of a window's rollup rows: the project,
// grain, the hours' versions, the filter's task and agent.
func runRollupCond(f RunFilter, grains []uint8, hours []hourVersion) (string, []any) {
	tuples := make([]string, len(hours))
	for i, h := range hours {
		tuples[i] = fmt.Sprintf("(%d, %d)", h.hour.Unix(), h.version)
	}
	gs := make([]string, len(grains))
	for i, g := range grains {
		gs[i] = fmt.Sprint(g)
	}
	cond := "project = ? AND grain IN (" + strings.Join(gs, ", ") + ") AND hour >= ? AND hour <= ? AND (toUInt32(hour), version) IN (" +
		strings.Join(tuples, ", ") + ")"
	args := []any{f.Project, hours[0].hour.UTC(), hours[len(hours)-1].hour.UTC()}
	if f.Task != "" {
		cond += " AND task = ?"
		args = append(args, f.Task)
	}
	if f.Agent != "" {
		cond += " AND agent = ?"
		args = append(args, f.Agent)
	}
	return cond, args
}

// runRollupSQL builds the reads of a window's rollup rows: each hour's
// runs and maxima by key and class (hourly), and the whole window's by
// key and class with the sketches merged by ClickHouse (sumMap). With
// withTasks, the task grain's rows come too, under key "" (grain 1), so
// that a report by agent counts each run once.
func runRollupSQL(t tables, f RunFilter, grain uint8, withTasks bool, hours []hourVersion) (hourly, merged string, args []any) {
	grains := []uint8{grain}
	if withTasks && grain != schema.RunGrainTask {
		grains = append(grains, schema.RunGrainTask)
	}
	cond, args := runRollupCond(f, grains, hours)
	key := "task" // by task, of the task rows or of one agent's
	switch {
	case withTasks:
		key = "if(grain = 1, task, agent)"
	case grain == schema.RunGrainVersion:
		key = "concat(task, '\\0', fingerprint)"
	}
	var maxes, measures []string
	for _, m := range schema.RunMeasures {
		sum, sumSq, mx, keys, counts := schema.RunRollupMeasureColumns(m)
		maxes = append(maxes, mx)
		measures = append(measures, "sum("+sum+")", "sum("+sumSq+")", "max("+mx+")",
			"(sumMap("+keys+", "+counts+") AS sk_"+m+").1", "sk_"+m+".2")
	}
	table := t.Table(schema.TableRunRollup)
	hourly = "SELECT toUInt32(hour), grain, " + key + ", class, runs, " + strings.Join(maxes, ", ") + " FROM " + table +
		" WHERE " + cond + " AND runs > 0"
	merged = "SELECT grain, " + key + " AS k, class, sum(runs), sum(waiting), min(first_ns), max(last_ns), " +
		"argMax(last_trace, (last_ns, last_trace)), " + strings.Join(measures, ", ") + " FROM " + table +
		" WHERE " + cond + " AND runs > 0 GROUP BY grain, k, class"
	return hourly, merged, args
}

// readRunRollup adds the usable hours' rows to w.
func (r *core) readRunRollup(ctx context.Context, f RunFilter, grain uint8, byAgent bool, hours []hourVersion, w *rolledWindow) error {
	hourly, merged, args := runRollupSQL(r.store, f, grain, byAgent, hours)
	rows, err := r.store.Conn().Query(ctx, hourly, args...)
	if err != nil {
		return fmt.Errorf("read run rollup: %w", err)
	}
	var h uint32
	var g uint8
	var x hourClass
	dest := []any{&h, &g, &x.key, &x.class, &x.runs}
	for i := range x.max {
		dest = append(dest, &x.max[i])
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return fmt.Errorf("read run rollup: %w", err)
		}
		if byAgent && g == schema.RunGrainTask {
			continue
		}
		x.hour = time.Unix(int64(h), 0).UTC()
		w.hourly = append(w.hourly, x)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("read run rollup: %w", err)
	}
	rows, err = r.store.Conn().Query(ctx, merged, args...)
	if err != nil {
		return fmt.Errorf("read run rollup: %w", err)
	}
	defer rows.Close()
	var key string
	var class uint8
	var c classRuns
	var skKeys [8][]int16 // the merged sketches (sumMap's keys and counts)
	var skCounts [8][]uint64
	dest = []any{&g, &key, &class, &c.runs, &c.waiting, &c.seen.firstNs, &c.seen.lastNs, &c.seen.last}
	for i := range c.m {
		dest = append(dest, &c.m[i].Sum, &c.m[i].SumSq, &c.m[i].Max, &skKeys[i], &skCounts[i])
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read run rollup: %w", err)
		}
		if g == schema.RunGrainTask && byAgent {
			w.runs += int(c.runs)
			continue
		}
		if !byAgent {
			w.runs += int(c.runs)
		}
		for i := range c.m {
			c.m[i].N = c.runs
			c.sk[i] = consistency.Sketch{Keys: slices.Clone(skKeys[i]), Counts: slices.Clone(skCounts[i])}
		}
		w.group(key)[class].merge(&c)
		groupIn(w.rolledUp, key)[class].merge(&c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read run rollup: %w", err)
	}
	return nil
}

// scanHours reads the runs of hours (rolled-up hours that may hold runs a
// report names), newest hour first, in blocks of consecutive hours (one
// hour a block when oneByOne: the caller may stop early), until done
// reports true after a block.
func (r *core) scanHours(ctx context.Context, w *rolledWindow, hours []time.Time, oneByOne bool, done func() bool, each func(run *windowRun, verdict *bool, s *streamedRun)) error {
	hours = slices.Clone(hours)
	slices.SortFunc(hours, func(a, b time.Time) int { return b.Compare(a) })
	hours = slices.Compact(hours)
	for len(hours) > 0 {
		n := 1
		for !oneByOne && n < len(hours) && hours[n].Equal(hours[n-1].Add(-time.Hour)) {
			n++
		}
		from, to := hours[n-1], hours[0].Add(time.Hour)
		hours = hours[n:]
		err := r.eachGradedRun(ctx, withRange(w.filter, from, to), "", facts{approvals: true, noRetries: true}, runParts{lv: w.lv, noLive: true}, func(run *windowRun, verdict *bool) error {
			s := w.streamedOf(run, verdict)
			each(run, verdict, &s)
			return nil
		})
		if err != nil {
			return err
		}
		if done != nil && done() {
			return nil
		}
	}
	return nil
}

// newestFirst orders runs by start, newest first, then by trace id (as
// newer).
func newestFirst(a, b *streamedRun) int {
	return cmp.Or(cmp.Compare(b.startNs, a.startNs), strings.Compare(b.traceID, a.traceID))
}
