SELECT if(tool_name = '', ?, tool_name) AS tool, trace_id, args_hash, uniqExact(span_id) AS n FROM `tally`.`span_facts` WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND span_type = 'tool' AND args_hash != '' AND status != 'error' GROUP BY tool, trace_id, args_hash HAVING n >= ? ORDER BY n DESC, tool, trace_id LIMIT 20
-- parameters:
-- string unknown
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
-- uint64 3
