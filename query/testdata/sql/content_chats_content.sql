SELECT project, trace_id, span_id, start, kind, source_key, value, truncated, version FROM `tally`.`content` FINAL WHERE project = ? AND (trace_id, span_id) IN ?
-- parameters:
-- string p
-- clickhouse.GroupSet {[{[t1 s1]} {[t2 s2]}]}
