SELECT toUInt32(hour) AS h, max(version) AS v, argMax(spans, version), argMax(version_sum, version) FROM `tally`.`search_keys` WHERE project = '' AND scope = '' AND key = '' AND hour >= ? AND hour < ? GROUP BY h
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
