SELECT conversation_id, sum(cost_total), sum(spans) AS n_spans
FROM `tally`.`cost_rollup_hourly`
WHERE project = ? AND grain = ? AND hour >= ? AND hour <= ?
  AND (hour, version) IN (SELECT hour, max(version) FROM `tally`.`cost_rollup_hourly` WHERE project = ? AND grain = ? AND hour >= ? AND hour <= ? GROUP BY hour)
GROUP BY conversation_id
HAVING n_spans > 0
-- parameters:
-- string p
-- uint8 7
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 01:00:00 +0000 UTC
-- string p
-- uint8 7
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 01:00:00 +0000 UTC
