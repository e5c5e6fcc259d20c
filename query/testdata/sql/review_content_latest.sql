SELECT span_id, kind, if(kind = ?, value, ''), if(kind = ?, cityHash64(value), 0), truncated FROM (SELECT span_id, kind, source_key, value, truncated FROM `tally`.`content` PREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? WHERE kind IN (?, ?) ORDER BY version DESC LIMIT 1 BY trace_id, span_id, kind, source_key) ORDER BY span_id, source_key
-- parameters:
-- string tool.arguments
-- string tool.definitions
-- string p
-- clickhouse.GroupSet {[t1]}
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- string tool.arguments
-- string tool.definitions
