SELECT trace_id, start_ns, run_task, agents, signals FROM (SELECT trace_id, start, start_ns, if(task != '', task, name) AS run_task, agents, signals, signal_kinds, deleted, version FROM `tally`.`runs` WHERE project = ? AND (start, trace_id) IN (SELECT start, trace_id FROM `tally`.`runs` WHERE project = ? AND start >= ? AND start < ? AND toUInt32(toStartOfHour(start)) IN (1796083200) AND notEmpty(signal_kinds))
ORDER BY version DESC LIMIT 1 BY start, trace_id)
WHERE deleted = 0 AND notEmpty(signal_kinds) AND run_task = ? AND has(agents, ?)
-- parameters:
-- string p
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 01:00:00 +0000 UTC
-- string t
-- string a
