SELECT scope, k, sum(n) AS spans FROM (SELECT toString(scope) AS scope, key AS k, toUInt64(sum(spans)) AS n FROM `tally`.`search_keys` WHERE project = ? AND total = 1 AND 0 GROUP BY scope, k UNION ALL SELECT 'span' AS scope, k, count() AS n FROM `tally`.`spans` ARRAY JOIN attr_keys AS k WHERE project = ? AND start >= ? AND start < ? GROUP BY k UNION ALL SELECT 'resource' AS scope, k, count() AS n FROM `tally`.`spans` ARRAY JOIN resource_keys AS k WHERE project = ? AND start >= ? AND start < ? GROUP BY k) GROUP BY scope, k ORDER BY scope DESC, spans DESC, k LIMIT 500 BY scope
-- parameters:
-- string p
-- string p
-- time.Time 2026-12-01 01:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- string p
-- time.Time 2026-12-01 01:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
