SELECT DISTINCT project FROM `tally`.`span_facts` WHERE start >= ? ORDER BY project
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
