SELECT toUInt64(intDiv(toUInt32(start), 3600) * 3600) AS h, count(), sum(version) FROM `tally`.`span_facts` WHERE start >= ? AND start < ? AND version <= ? GROUP BY h
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1764892800000000000
