SELECT trace_id, span_id, parent_span_id, tool_name, tool_call_id, step_id, args_hash, status, start_ns, duration_ns, attempt
FROM `tally`.`spans` FINAL
WHERE project = ? AND span_type = 'tool' AND trace_id IN ? AND start >= ? AND start <= ?
ORDER BY trace_id, start_ns, span_id
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
