SELECT project, trace_id, span_id, parent_span_id, start_ns, end_ns, name, status, service,
	span_type, provider, model, agent_name, conversation_id, user_id, task_name, tool_name, tool_call_id,
	step_id, attempt, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
	usage_mode, cost_total, cost_input, cost_cache_read, cost_cache_write, cost_output, cost_source,
	cost_confidence, usage_record, version
FROM `tally`.`span_facts`
WHERE start >= ? AND start <= ? AND project = ? AND trace_id >= ? AND trace_id < ?
  AND (project, trace_id) IN (SELECT project, trace_id FROM `tally`.`span_facts` WHERE start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND project = ? AND trace_id >= ? AND trace_id < ?)
-- parameters:
-- time.Time 2026-11-30 23:00:00 +0000 UTC
-- time.Time 2026-12-02 01:00:00 +0000 UTC
-- string p
-- string 3f0
-- string a17
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
-- string p
-- string 3f0
-- string a17
