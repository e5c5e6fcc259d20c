SELECT project, trace_id, min_v, max_v, max_end, n, row_start FROM (SELECT project, trace_id, min(version) AS min_v, max(version) AS max_v, max(end_ns) AS max_end, count() AS n FROM `tally`.`span_facts` WHERE start >= ? AND start < ? GROUP BY project, trace_id) AS s ANY LEFT JOIN (SELECT project, trace_id, toUInt32(start) AS row_start, max_version AS row_v, review AS row_review, row_spans, row_tree FROM (SELECT project, trace_id, start, max_version, review, deleted, spans AS row_spans, notEmpty(tree) AS row_tree FROM `tally`.`runs` FINAL WHERE start >= ? AND start < ?
SETTINGS max_read_buffer_size = 65536) WHERE deleted = 0) AS r USING (project, trace_id) WHERE max_v > row_v OR row_review != ? OR (row_spans >= ? AND row_tree = 0) ORDER BY project, trace_id
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- time.Time 2026-11-30 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 77
-- uint64 1000
