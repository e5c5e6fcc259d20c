SELECT trace_id, argMinIf(task_name, start_ns, task_name != ''), argMinIf(name, start_ns, parent_span_id = ''), argMin(name, start_ns) FROM `tally`.`span_facts` WHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? GROUP BY trace_id
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
-- time.Time 2026-11-30 23:00:00 +0000 UTC
-- time.Time 2026-12-02 01:00:00 +0000 UTC
