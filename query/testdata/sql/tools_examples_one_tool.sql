SELECT tool,
	arrayMap(t -> tupleElement(t, 2), arraySlice(arrayReverseSort(groupArray((max_dur, trace_id))), 1, 5)),
	arrayMap(t -> tupleElement(t, 2), arraySlice(arrayReverseSort(groupArrayIf((last_err, trace_id), last_err > 0)), 1, 5))
FROM (
	SELECT if(tool_name = '', ?, tool_name) AS tool, trace_id, max(duration_ns) AS max_dur,
		maxIf(start_ns, status = 'error') AS last_err
	FROM `tally`.`span_facts`
	WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND if(tool_name = '', ?, tool_name) = ? AND span_type = 'tool'
	GROUP BY tool, trace_id)
GROUP BY tool
-- parameters:
-- string unknown
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
-- string unknown
-- string search
