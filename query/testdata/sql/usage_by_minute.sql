SELECT agent_name, model, toStartOfMinute(start) AS minute, sumIf(cache_read_tokens, usage_mode NOT IN ('', 'aggregated')), sumIf(cost_total, usage_mode != 'aggregated') FROM `tally`.`span_facts` FINAL WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND (usage_mode NOT IN ('', 'aggregated') OR (cost_total != 0 AND usage_mode = '')) GROUP BY agent_name, model, minute ORDER BY minute, agent_name, model
-- parameters:
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
