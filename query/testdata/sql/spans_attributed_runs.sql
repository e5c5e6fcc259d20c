SELECT project, trace_id, span_id, parent_span_id, start_ns, end_ns, name, status, service,
	span_type, provider, model, agent_name, conversation_id, user_id, task_name, tool_name, tool_call_id,
	step_id, attempt, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
	usage_mode, cost_total, cost_input, cost_cache_read, cost_cache_write, cost_output, cost_source,
	cost_confidence, usage_record, version
FROM `tally`.`spans` FINAL
PREWHERE project = ? AND trace_id IN ?
WHERE start >= ? AND start <= ?
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
-- time.Time 2026-11-30 23:00:00 +0000 UTC
-- time.Time 2026-12-02 01:00:00 +0000 UTC
