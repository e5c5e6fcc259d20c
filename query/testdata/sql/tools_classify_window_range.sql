SELECT trace_id, a_span, a_tool, a_parent, a_call, a_step, a_args, a_err, a_start, a_dur, a_attempt
FROM (
	SELECT trace_id, groupArray(span_id) AS a_span, groupArray(tool) AS a_tool, groupArray(parent) AS a_parent,
		groupArray(call) AS a_call, groupArray(step) AS a_step, groupArray(args) AS a_args, groupArray(err) AS a_err,
		groupArray(start_ns) AS a_start, groupArray(duration_ns) AS a_dur, groupArray(attempt) AS a_attempt
	FROM (
		SELECT trace_id, span_id, if(tool_name = '', ?, tool_name) AS tool, cityHash64(parent_span_id) AS parent,
			if(tool_call_id = '', toUInt64(0), cityHash64(tool_call_id)) AS call,
			if(step_id = '', toUInt64(0), cityHash64(step_id)) AS step,
			if(args_hash = '', toUInt64(0), cityHash64(args_hash)) AS args,
			status = 'error' AS err, start_ns, duration_ns, attempt
		FROM `tally`.`span_facts`
		WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ? AND trace_id >= ? AND trace_id < ? AND span_type = 'tool'
		LIMIT 1 BY trace_id, span_id)
	GROUP BY trace_id)
ARRAY JOIN a_span, a_tool, a_parent, a_call, a_step, a_args, a_err, a_start, a_dur, a_attempt
-- parameters:
-- string unknown
-- string p
-- time.Time 2026-12-01 00:00:00 +0000 UTC
-- time.Time 2026-12-02 00:00:00 +0000 UTC
-- uint64 1796083200000000000
-- uint64 1796169600000000000
-- string 3f0
-- string a17
