SELECT groupArray(e) FROM (
SELECT end_ns AS e FROM `tally`.`runs` WHERE project = ? AND start >= ? AND start <= ? AND deleted = 0
ORDER BY e DESC
LIMIT 204
)
-- parameters:
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
