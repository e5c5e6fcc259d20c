SELECT cityHash64(value) AS h, any(value) FROM `tally`.`content` PREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? WHERE kind = ? AND truncated = 0 GROUP BY h
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- string tool.definitions
