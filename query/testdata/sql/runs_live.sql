SELECT trace_id FROM `tally`.`span_facts` WHERE project = ? AND version > ? AND start >= ? GROUP BY trace_id
-- parameters:
-- string p
-- uint64 1234
-- time.Time 2026-11-30 23:00:00 +0000 UTC
