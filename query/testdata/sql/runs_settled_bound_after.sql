SELECT min(sort_key), count() FROM (
SELECT toUInt64(round(if(c_total > 0, c_total, 0) * 1e9)) AS sort_key FROM (SELECT deleted, trace_id, agents AS agents, conversation_id AS conv, start_ns AS s_ns, cost_total AS c_total, names AS names FROM `tally`.`runs` WHERE project = ? AND start >= ?)
WHERE deleted = 0 AND s_ns >= ? AND has(agents, ?) AND (startsWith(trace_id, ?) OR conv = ? OR arrayExists(n -> positionCaseInsensitive(n, ?) > 0, names)) AND sort_key <= ?
ORDER BY sort_key DESC
LIMIT 102
)
-- parameters:
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- string planner
-- string abc
-- string ABC
-- string ABC
-- uint64 3
