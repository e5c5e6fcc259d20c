SELECT trace_id, agent_name, provider, model, count(), countIf(elig),
	sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
	sumIf(input_tokens, elig), sumIf(cache_read_tokens, elig), min(start_ns), max(start_ns)
FROM (
	SELECT trace_id, agent_name, provider, model, input_tokens, cache_read_tokens, cache_write_tokens, start_ns,
		input_tokens >= transform(cityHash64(provider, model), ?, ?, toUInt64(18446744073709551615)) AS elig
	FROM `tally`.`span_facts`
	WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND model = ? AND agent_name IN (?, '') AND span_type = 'inference' AND usage_mode NOT IN ('', 'aggregated')
	LIMIT 1 BY trace_id, span_id)
GROUP BY trace_id, agent_name, provider, model
-- parameters:
-- []uint64 [11]
-- []uint64 [1024]
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
-- string gpt-4o
-- string planner
