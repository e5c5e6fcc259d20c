SELECT m, arrayMap(t -> tupleElement(t, 2), arraySlice(arrayReverseSort(groupArray((max_dur, trace_id))), 1, 5))
FROM (
	SELECT if(model = '', ?, model) AS m, trace_id, max(duration_ns) AS max_dur FROM `tally`.`span_facts`
	WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND span_type = 'inference'
	GROUP BY m, trace_id)
GROUP BY m
-- parameters:
-- string unknown
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
