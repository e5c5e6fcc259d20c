SELECT trace_id, count(), sum(version), max(version), min(start_ns), countIf(start_ns >= ? AND start_ns < ?) AS in_hour FROM `tally`.`span_facts`
WHERE project = ? AND start >= ? AND start <= ?
GROUP BY trace_id HAVING in_hour > 0
-- parameters:
-- uint64 1796083200000000000
-- uint64 1796086800000000000
-- string p
-- time.Time 2026-11-30 23:00:00 +0000 UTC
-- time.Time 2026-12-01 02:00:00 +0000 UTC
