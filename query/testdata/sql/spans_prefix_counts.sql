SELECT substring(trace_id, 1, 3) AS p, count() FROM `tally`.`span_facts` WHERE start >= ? AND start < ? GROUP BY p ORDER BY p
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
