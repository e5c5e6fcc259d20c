SELECT trace_id, toUInt32(start), toUInt64(n_retries) AS sort_key, version FROM (SELECT trace_id, start, deleted, version, tool_retries AS n_retries FROM `tally`.`runs` WHERE project = ?)
WHERE deleted = 0 AND trace_id NOT IN (SELECT trace_id FROM `tally`.`span_facts` WHERE project = ? AND version > ? AND start >= ? GROUP BY trace_id) AND (sort_key > ? OR (sort_key = ? AND trace_id > ?))
ORDER BY sort_key ASC, trace_id ASC
LIMIT 102
-- parameters:
-- string p
-- string p
-- uint64 1234
-- time.Time 2026-11-30 00:00:00 +0000 UTC
-- uint64 3
-- uint64 3
-- string aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
