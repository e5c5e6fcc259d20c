SELECT trace_id, span_id, name, source, score, has_score, label, passed, explanation, created_at FROM (SELECT * FROM `tally`.`outcomes` WHERE project = ? AND run_start >= ? AND run_start <= ? ORDER BY version DESC LIMIT 1 BY trace_id, name, source, span_id) ORDER BY trace_id, created_at, name, source, span_id
-- parameters:
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 01:00:00 +0000 UTC
