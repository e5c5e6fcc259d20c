SELECT trace_id, toUInt32(start), toUInt64(s_ns) AS sort_key, version FROM (SELECT trace_id, start, deleted, version, start_ns AS s_ns FROM `tally`.`runs` WHERE project = ? AND start >= ? AND toUInt64(s_ns) >= ? AND start >= ?)
WHERE deleted = 0 AND s_ns >= ? AND trace_id NOT IN ?
ORDER BY sort_key DESC, trace_id DESC
LIMIT 102
-- parameters:
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- uint64 1796083260500000000
-- time.Time 2026-12-01 00:01:00 +0000 UTC
-- uint64 1796083200000000000
-- clickhouse.GroupSet {[t1 t2]}
