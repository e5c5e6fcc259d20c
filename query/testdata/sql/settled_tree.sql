SELECT tree, max_version, review, deleted FROM `tally`.`runs` PREWHERE project = ? AND start = ? AND trace_id = ? ORDER BY version DESC LIMIT 1
-- parameters:
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- string t1
