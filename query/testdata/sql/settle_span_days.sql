SELECT toUInt64(intDiv(toUInt32(start), 86400) * 86400) AS d, count() FROM `tally`.`span_facts` WHERE start >= ? AND start < ? GROUP BY d
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
