SELECT conv, trace_id, row_start_s, row_version, settled FROM (
SELECT conv, e_ns, trace_id, toUInt32(0) AS row_start_s, toUInt64(0) AS row_version, toUInt8(0) AS settled FROM (SELECT toString(tupleElement(r, 1)) AS trace_id, toString(tupleElement(r, 2)) AS conv, toUInt64(tupleElement(r, 3)) AS s_ns, toUInt64(tupleElement(r, 4)) AS e_ns, toUInt64(tupleElement(r, 5)) AS n_err, toUInt64(tupleElement(r, 6)) AS in_t, toUInt64(tupleElement(r, 7)) AS cr_t, toUInt64(tupleElement(r, 8)) AS cw_t, toUInt64(tupleElement(r, 9)) AS out_t, toUInt64(tupleElement(r, 10)) AS rs_t, toFloat64(tupleElement(r, 11)) AS c_total, toFloat64(tupleElement(r, 12)) AS c_in, toFloat64(tupleElement(r, 13)) AS c_cr, toFloat64(tupleElement(r, 14)) AS c_cw, toFloat64(tupleElement(r, 15)) AS c_out FROM (SELECT arrayJoin(arrayMap((x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15) -> (x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, [0.25, 1e-07], [0.2, 0], [0, 1e-07], [0, 0], [0.05, 0])) AS r))
WHERE conv != ''
UNION ALL
SELECT conv, e_ns, trace_id, toUInt32(row_start) AS row_start_s, row_version, toUInt8(1) AS settled FROM (SELECT trace_id, name AS root_name, name AS first_name, task, service AS svc, agents, models,
	conversation_id AS conv, user_id AS usr, start_ns AS s_ns, end_ns AS e_ns, spans AS n_spans, llm_calls AS n_llm,
	tool_calls AS n_tool, errors AS n_err, failed AS run_err, toUInt64(0) AS n_usage, from_aggregate AS from_agg,
	input_tokens AS in_t, cache_read_tokens AS cr_t, cache_write_tokens AS cw_t, output_tokens AS out_t,
	reasoning_tokens AS rs_t, cost_total AS c_total, cost_input AS c_in, cost_cache_read AS c_cr,
	cost_cache_write AS c_cw, cost_output AS c_out, cost_exact AS cf_exact, cost_upper_bound AS cf_upper,
	cost_lower_bound AS cf_lower, cost_corrected AS cf_corr, cost_approximate AS cf_approx,
	unpriced_spans AS n_unpriced, unreconciled_spans AS n_unrec,
	tool_retries AS n_retries, tool_repeats AS n_repeats, deleted, start AS row_start, version AS row_version FROM `tally`.`runs` WHERE project = ? AND start >= ?)
WHERE deleted = 0 AND conv != '' AND s_ns >= ? AND trace_id NOT IN ?
)
ORDER BY e_ns DESC, conv DESC, row_version DESC
LIMIT 1 BY conv
LIMIT 51
-- parameters:
-- []string [t1 t2]
-- []string [c1 c2]
-- []uint64 [10 30]
-- []uint64 [20 40]
-- []uint64 [1 0]
-- []uint64 [100 0]
-- []uint64 [0 64]
-- []uint64 [0 32]
-- []uint64 [7 0]
-- []uint64 [0 5]
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- clickhouse.GroupSet {[t1 t2]}
