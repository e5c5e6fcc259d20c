SELECT project, trace_id, span_id, start, kind, source_key, value, truncated, version FROM `tally`.`content` FINAL WHERE project = ? AND trace_id = ? ORDER BY span_id, kind, source_key
-- parameters:
-- string p
-- string t1
