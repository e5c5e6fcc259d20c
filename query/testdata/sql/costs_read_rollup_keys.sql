SELECT conversation_id, sum(spans), sum(llm_calls), sum(tool_calls), sum(tool_retries), sum(tool_errors),
	sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens), sum(reasoning_tokens),
	sum(cost_total), sum(cost_input), sum(cost_cache_read), sum(cost_cache_write), sum(cost_output),
	sum(unpriced_spans), sum(unpriced_input_tokens), sum(unpriced_output_tokens), sum(client_cost_spans),
	sum(retry_tax_usd), sum(retry_tax_calls),
	sum(cost_exact), sum(cost_upper_bound), sum(cost_lower_bound), sum(cost_corrected), sum(cost_approximate)
FROM `tally`.`cost_rollup_hourly`
WHERE project = ? AND grain = ? AND hour >= ? AND hour <= ? AND conversation_id IN ?
  AND (hour, version) IN (SELECT hour, max(version) FROM `tally`.`cost_rollup_hourly` WHERE project = ? AND grain = ? AND hour >= ? AND hour <= ? GROUP BY hour)
GROUP BY conversation_id
-- parameters:
-- string p
-- uint8 7
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 01:00:00 +0000 UTC
-- clickhouse.GroupSet {[c1 c2]}
-- string p
-- uint8 7
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 01:00:00 +0000 UTC
