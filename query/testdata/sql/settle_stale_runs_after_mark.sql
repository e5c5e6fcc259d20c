SELECT project, trace_id, min_v, max_v, max_end, n, row_starts FROM (SELECT project, trace_id, min(version) AS min_v, max(version) AS max_v, max(end_ns) AS max_end, count() AS n FROM `tally`.`span_facts` WHERE start >= ? AND start < ? AND version > ? GROUP BY project, trace_id) AS s ANY LEFT JOIN (SELECT project, trace_id, groupArray(toUInt32(start)) AS row_starts, min(max_version) AS row_v, min(review = ?) AS row_reviewed, max(spans >= ? AND notEmpty(tree) = 0) AS row_treeless FROM (SELECT project, trace_id, start, max_version, review, deleted, spans, tree FROM `tally`.`runs` FINAL WHERE start >= ? AND start < ?
SETTINGS max_read_buffer_size = 65536) WHERE deleted = 0 GROUP BY project, trace_id) AS r USING (project, trace_id) WHERE max_v > row_v OR row_reviewed = 0 OR row_treeless = 1 OR length(row_starts) > 1 ORDER BY project, trace_id
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1234
-- uint64 77
-- uint64 1000
-- time.Time 2026-11-30 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
