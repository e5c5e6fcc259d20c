SELECT provider, model, sum(unpriced_spans) AS n_unpriced, sum(unpriced_input_tokens), sum(unpriced_output_tokens)
FROM `tally`.`cost_rollup_hourly`
WHERE project = ? AND grain = ? AND hour >= ? AND hour <= ?
  AND (hour, version) IN (SELECT hour, max(version) FROM `tally`.`cost_rollup_hourly` WHERE project = ? AND grain = ? AND hour >= ? AND hour <= ? GROUP BY hour)
GROUP BY provider, model
HAVING n_unpriced > 0
-- parameters:
-- string p
-- uint8 2
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 01:00:00 +0000 UTC
-- string p
-- uint8 2
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 01:00:00 +0000 UTC
