SELECT if(tool_name = '', ?, tool_name) AS tool, quantilesExact(0.5, 0.95, 0.99)(duration_ns / 1e6)
FROM (
	SELECT trace_id, span_id, tool_name, duration_ns
	FROM `tally`.`span_facts`
	WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND span_type = 'tool'
	LIMIT 1 BY trace_id, span_id)
GROUP BY tool
-- parameters:
-- string unknown
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
