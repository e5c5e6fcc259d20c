package query

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// A report by conversation or user over a day of a busy deployment has
// ~200k groups, and reading every measure of each from the rollup took
// most of its time, for a page that lists 100 of them. A report without
// buckets that lists its costliest groups reads the rollup in two steps:
// every key's cost first (two columns), then, once the costliest keys are
// known (the rollup's costs and the live hours' added up), every measure
// of those keys and the sums of all the others.

// manyKeys are the dimensions whose reports read the rollup in two steps:
// those with a value per conversation or per user of the product (tens
// of thousands a day). The others have few values (agents, models,
// tasks…), which one read answers ~10 ms sooner than two.
var manyKeys = map[string]bool{ByConversation: true, ByUser: true}

// maxTopKeys is the most groups a report lists for the rollup to be read
// in two steps: the listed keys are named in the second statement (an
// IN list of 100,000 conversation ids would pass ClickHouse's 256 KiB
// max_query_size). A report listing more reads every group's measures.
const maxTopKeys = 2000

// topView asks aggregate for a view's limit costliest keys only (a report
// without buckets), and gets back the others' totals and how many keys
// there were in all.
type topView struct {
	limit  int
	rolled map[string]float64 // each key's cost in the rollup's hours (the first step)
	others CostTotals
	total  int
}

// readRollupCosts reads the cost of each of v's keys in the rolled-up
// hours (the keys with spans: tombstones are left out, as readRollup
// leaves them).
func (r *core) readRollupCosts(ctx context.Context, project string, hours []time.Time, v view) (map[string]float64, error) {
	q, args := readRollupCostsSQL(r.store, project, hours, v)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read cost rollup: %w", err)
	}
	defer rows.Close()
	out := map[string]float64{}
	var key string
	var cost float64
	var spans uint64
	for rows.Next() {
		if err := rows.Scan(&key, &cost, &spans); err != nil {
			return nil, fmt.Errorf("read cost rollup: %w", err)
		}
		out[key] = cost
	}
	return out, rows.Err()
}

// readRollupCostsSQL builds readRollupCosts' statement.
func readRollupCostsSQL(t tables, project string, hours []time.Time, v view) (string, []any) {
	q, args := readRollupSQL(t, project, hours, v, false, "sum(cost_total), sum(spans) AS n_spans", "", nil)
	return q + "\nHAVING n_spans > 0", args
}

// finishTop completes a top view's aggregation: live holds the view's
// live totals (bucket 0), top.rolled the rollup's costs. It picks the
// limit costliest keys (cost, then key, as a report lists them), reads
// their measures and the others' sums from the rollup, and returns the
// listed keys' totals; the rest is added up in top.others.
func (r *core) finishTop(ctx context.Context, project string, hours []time.Time, v view, top *topView, live aggregation) (aggregation, error) {
	type keyCost struct {
		key  string
		cost float64
	}
	costs := make(map[string]float64, len(top.rolled)+len(live))
	for k, c := range top.rolled {
		costs[k] = c
	}
	for k, t := range live {
		costs[k.key] += t.Cost.Total
	}
	top.total = len(costs)
	out := aggregation{}
	if len(costs) <= top.limit {
		// Every key is listed: one read of every measure.
		if len(top.rolled) > 0 {
			if err := r.readRollup(ctx, project, hours, BucketNone, v, out); err != nil {
				return nil, err
			}
		}
		for k, t := range live {
			out.at(k).add(t)
		}
		return out, nil
	}
	all := make([]keyCost, 0, len(costs))
	for k, c := range costs {
		all = append(all, keyCost{k, c})
	}
	slices.SortFunc(all, func(a, b keyCost) int { return costThenKey(a.cost, a.key, b.cost, b.key) })
	listed := make(map[string]bool, top.limit)
	var ids []string
	for _, kc := range all[:top.limit] {
		listed[kc.key] = true
		if _, ok := top.rolled[kc.key]; ok {
			ids = append(ids, kc.key)
		}
	}
	if len(ids) > 0 {
		if err := r.readRollupKeys(ctx, project, hours, v, ids, out); err != nil {
			return nil, err
		}
	}
	if len(top.rolled) > len(ids) {
		if err := r.readRollupOthers(ctx, project, hours, v, ids, &top.others); err != nil {
			return nil, err
		}
	}
	for k, t := range live {
		if listed[k.key] {
			out.at(k).add(t)
		} else {
			top.others.add(t)
		}
	}
	return out, nil
}

// readRollupKeys adds the rollup's rows of v's keys ids in the given hours
// to agg.
func (r *core) readRollupKeys(ctx context.Context, project string, hours []time.Time, v view, ids []string, agg aggregation) error {
	q, args := readRollupKeysSQL(r.store, project, hours, v, ids, true)
	return r.scanRollup(ctx, q, args, false, BucketNone, v, agg)
}

// readRollupKeysSQL builds the statement of the rollup's rows of v's keys
// ids (in) or of every other key's, added up as one (not in).
func readRollupKeysSQL(t tables, project string, hours []time.Time, v view, ids []string, in bool) (string, []any) {
	if in {
		return readRollupSQL(t, project, hours, v, false, "", v.dims[0]+" IN ?", []any{traceSet(ids)})
	}
	return readRollupSQL(t, project, hours, view{grain: v.grain}, false, "", v.dims[0]+" NOT IN ?", []any{traceSet(ids)})
}

// readRollupOthers adds up the rollup's rows of every key of v but ids in
// the given hours into t.
func (r *core) readRollupOthers(ctx context.Context, project string, hours []time.Time, v view, ids []string, t *CostTotals) error {
	q, args := readRollupKeysSQL(r.store, project, hours, v, ids, false)
	// One row: the sums of every other key's rows (a view of no
	// dimension).
	agg := aggregation{}
	if err := r.scanRollup(ctx, q, args, false, BucketNone, view{grain: v.grain}, agg); err != nil {
		return err
	}
	for _, s := range agg {
		t.add(s)
	}
	return nil
}
