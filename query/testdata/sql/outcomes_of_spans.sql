SELECT trace_id, span_id, attr_keys, attr_values, event_names, event_attrs FROM `tally`.`spans` PREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? WHERE has(event_names, ?) OR has(attr_keys, ?) OR arrayExists(k -> k LIKE 'evaluations.%' OR k LIKE 'annotations.%' OR k LIKE 'trace.evaluations.%' OR k LIKE 'trace.annotations.%', attr_keys) ORDER BY trace_id, start_ns, span_id LIMIT 1 BY trace_id, span_id
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- string gen_ai.evaluation.result
-- string gen_ai.evaluation.name
