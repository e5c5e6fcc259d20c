SELECT value, sum(n) AS spans FROM (SELECT substring(v, 2) AS value, count() AS n FROM (SELECT if(model != '', concat('1', model), '') AS v FROM `tally`.`spans` WHERE project = ? AND start >= ? AND start <= ?) WHERE v != '' GROUP BY value) GROUP BY value ORDER BY spans DESC, value LIMIT 50
-- parameters:
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
