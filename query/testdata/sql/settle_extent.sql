SELECT min(start), max(start), count() FROM `tally`.`spans` PREWHERE project = ? AND trace_id IN ? WHERE start >= ? AND start <= ?
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
