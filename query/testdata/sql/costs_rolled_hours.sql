SELECT toUInt32(hour) AS h, max(version), argMax(raw_rows, version) FROM `tally`.`cost_rollup_hours` WHERE hour >= ? AND hour < ? GROUP BY h ORDER BY h
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
