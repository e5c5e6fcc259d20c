SELECT trace_id, span_id, parent_span_id, tool_name, tool_call_id, step_id, args_hash, status = 'error', start_ns, duration_ns, attempt FROM `tally`.`span_facts` FINAL WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND span_type = 'tool' ORDER BY trace_id, start_ns, span_id
-- parameters:
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
