SELECT trace_id, argMin(span_id, start_ns) AS first, argMax(span_id, end_ns) AS last FROM `tally`.`spans` WHERE project = ? AND trace_id IN ? AND span_type = ? AND start >= ? AND start <= ? GROUP BY trace_id
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
-- string inference
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
