SELECT trace_id, version FROM (SELECT trace_id, start, version, deleted FROM `tally`.`runs` PREWHERE project = ? AND start IN (1796083200, 1796083260) AND trace_id IN ?
ORDER BY version DESC LIMIT 1 BY start, trace_id)
WHERE deleted = 0
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
