SELECT toUInt32(hour) AS h, argMax(raw_rows, version), argMax(raw_version_sum, version) FROM `tally`.`cost_rollup_hours` WHERE hour >= ? AND hour < ? GROUP BY h
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
