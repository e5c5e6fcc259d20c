SELECT trace_id, span_id, attr_keys, attr_values, event_names, event_attrs, finish_reasons FROM `tally`.`spans` WHERE project = ? AND (trace_id, span_id) IN ? LIMIT 1 BY trace_id, span_id
-- parameters:
-- string p
-- clickhouse.GroupSet {[{[t1 s1]} {[t2 s2]}]}
