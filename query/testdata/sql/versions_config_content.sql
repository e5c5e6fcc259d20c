SELECT trace_id, kind, value FROM `tally`.`content` FINAL PREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? WHERE kind IN (?, ?)
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- string tool.definitions
-- string system_instructions
