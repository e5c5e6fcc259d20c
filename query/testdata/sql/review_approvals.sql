SELECT trace_id, span_id, start_ns, duration_ns, arrayFilter(k -> has(['tally.approval.decision', 'tally.approval.by', 'tally.approval.tool'], k), attr_keys), arrayFilter((v, k) -> has(['tally.approval.decision', 'tally.approval.by', 'tally.approval.tool'], k), attr_values, attr_keys), if(has(event_names, 'tally.approval'), event_names, emptyArrayString()), if(has(event_names, 'tally.approval'), event_time_ns, emptyArrayUInt64()), if(has(event_names, 'tally.approval'), event_attrs, emptyArrayString())
FROM `tally`.`spans` FINAL
PREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ?
WHERE has(attr_keys, 'tally.approval.decision') OR has(event_names, 'tally.approval')
-- parameters:
-- string p
-- clickhouse.GroupSet {[t1 t2]}
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
