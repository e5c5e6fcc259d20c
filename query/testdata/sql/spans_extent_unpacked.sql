SELECT start, start_ns, end_ns, duration_ns, attempt, toString(finish_reasons), ttfc_ms, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, usage_unreconciled, usage_record, cost_input, cost_cache_read, cost_cache_write, cost_output, cost_total, toString(attr_keys), toString(attr_values), toString(column_keys), toString(resource_keys), toString(resource_values), toString(event_names), toString(event_time_ns), toString(event_attrs), ingested_at, version, project, trace_id, span_id, parent_span_id, name, kind, status, status_message, service, scope_name, scope_version, span_type, operation, provider, request_model, response_model, model, agent_name, agent_id, conversation_id, user_id, task_name, tool_name, tool_call_id, tool_type, step_id, args_hash, error_type, usage_mode, cost_source, cost_confidence, price_entry, price_version, links_json FROM `tally`.`spans` FINAL PREWHERE project = ? AND trace_id = ? WHERE start >= ? AND start <= ? ORDER BY start_ns, span_id
-- parameters:
-- string p
-- string t1
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 01:00:00 +0000 UTC
