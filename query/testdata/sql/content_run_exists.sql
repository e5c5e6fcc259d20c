SELECT count() FROM `tally`.`spans` WHERE project = ? AND trace_id = ?
-- parameters:
-- string p
-- string t1
