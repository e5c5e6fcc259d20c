SELECT trace_id, toUInt32(start), toUInt64(s_ns) AS sort_key, version FROM (SELECT trace_id, start, deleted, version, task AS task, service AS svc, agents AS agents, models AS models, conversation_id AS conv, start_ns AS s_ns, errors AS n_err, failed AS run_err, cost_total AS c_total, tools AS tools, names AS names FROM `tally`.`runs` FINAL WHERE project = ? AND start >= ? AND start <= ?
SETTINGS max_read_buffer_size = 65536)
WHERE deleted = 0 AND s_ns >= ? AND s_ns <= ? AND has(agents, ?) AND has(models, ?) AND svc = ? AND conv = ? AND task = ? AND has(tools, ?) AND run_err = 1 AND n_err > 0 AND (run_err = 1 OR n_err = 0) AND c_total >= ? AND (startsWith(trace_id, ?) OR conv = ? OR arrayExists(n -> positionCaseInsensitive(n, ?) > 0, names)) AND trace_id NOT IN ?
ORDER BY sort_key DESC, trace_id DESC
LIMIT 51
-- parameters:
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
-- string planner
-- string gpt-4o
-- string svc
-- string c1
-- string refund
-- string search
-- float64 0.5
-- string abc
-- string ABC
-- string ABC
-- clickhouse.GroupSet {[t1 t2]}
