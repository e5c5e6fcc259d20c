SELECT min(start), max(start), count(), max(version) FROM `tally`.`spans` PREWHERE project = ? AND trace_id = ?
-- parameters:
-- string p
-- string t1
