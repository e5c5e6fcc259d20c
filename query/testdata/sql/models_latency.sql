SELECT m, sum(n), quantilesExactArray(0.5, 0.95, 0.99)(ds), sum(tn), quantilesExactArray(0.5, 0.95, 0.99)(ts),
	arrayMap(t -> tupleElement(t, 2), arraySlice(arrayReverseSort(groupArray((max_dur, trace_id))), 1, 5))
FROM (
	SELECT if(model = '', ?, model) AS m, trace_id, count() AS n, groupArray(duration_ns / 1e6) AS ds,
		countIf(ttfc_ms > 0) AS tn, groupArrayIf(ttfc_ms, ttfc_ms > 0) AS ts, max(duration_ns) AS max_dur
	FROM (
		SELECT trace_id, span_id, model, duration_ns, ttfc_ms FROM `tally`.`span_facts`
		WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND span_type = 'inference'
		LIMIT 1 BY trace_id, span_id)
	GROUP BY m, trace_id)
GROUP BY m ORDER BY m
-- parameters:
-- string unknown
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
