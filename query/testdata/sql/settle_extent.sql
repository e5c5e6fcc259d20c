SELECT min(start), max(start), count() FROM `tally`.`spans` PREWHERE project = ? AND trace_id IN ?
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
