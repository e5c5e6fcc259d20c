SELECT project, grain, toInt64(toUInt32(hour)), agent, model, provider, task, service, tool, conversation_id, user_id, spans FROM `tally`.`cost_rollup_hourly` WHERE hour >= ? AND hour <= ? AND (hour, version) IN (SELECT hour, max(version) FROM `tally`.`cost_rollup_hourly` WHERE hour >= ? AND hour <= ? GROUP BY hour) AND spans > 0
-- parameters:
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 23:00:00 +0000 UTC
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-01 23:00:00 +0000 UTC
