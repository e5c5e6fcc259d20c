SELECT DISTINCT trace_id FROM `tally`.`spans` WHERE project = ? AND trace_id >= ? AND trace_id < ? ORDER BY trace_id LIMIT ?
-- parameters:
-- string p
-- string ab12
-- string ab12g
-- int 10
