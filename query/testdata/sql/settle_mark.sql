SELECT toUInt64(argMax(value, version)) FROM `tally`.`run_marks` WHERE name = ?
-- parameters:
-- string settled
