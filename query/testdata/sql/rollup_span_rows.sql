SELECT project, trace_id, span_id, parent_span_id, start, start_ns, end_ns, duration_ns, name, kind, status, status_message, service, scope_name, scope_version, span_type, operation, provider, request_model, response_model, model, agent_name, agent_id, conversation_id, user_id, task_name, tool_name, tool_call_id, tool_type, attempt, step_id, args_hash, finish_reasons, error_type, ttfc_ms, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, usage_mode, usage_unreconciled, usage_record, cost_input, cost_cache_read, cost_cache_write, cost_output, cost_total, cost_source, cost_confidence, price_entry, price_version, attr_keys, attr_values, column_keys, resource_keys, resource_values, event_names, event_time_ns, event_attrs, links_json, ingested_at, version FROM `tally`.`spans` FINAL WHERE start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ?
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
