SELECT trace_id, version FROM (SELECT trace_id, version, deleted FROM `tally`.`runs` FINAL WHERE project = ? AND start IN (toDateTime(1796083200), toDateTime(1796083260)) AND trace_id IN ?)
WHERE deleted = 0
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
