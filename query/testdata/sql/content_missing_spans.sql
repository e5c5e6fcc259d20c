SELECT DISTINCT span_id FROM `tally`.`spans` WHERE project = ? AND trace_id = ? AND span_id IN ?
-- parameters:
-- string p
-- string t1
-- clickhouse.GroupSet {[s1 s2]}
