#!/usr/bin/env bash
# Run tally locally (`make run`): start `tally serve` on 127.0.0.1:4318 on
# the embedded store (the ClickHouse engine in-process, no server to start),
# with its data in .tally/data, load demo runs, and wait. Ctrl-C stops tally
# (by its PID). Running it again reuses the data in .tally/.
#
# Expects bin/tally (make build) and .tally/lib/libchdb.so (scripts/chdb.sh).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

state_dir=.tally
tally_pidfile="$state_dir/tally.pid"
tally_log="$state_dir/tally.log"
listen=127.0.0.1:4318
endpoint="http://$listen"
ready_timeout_seconds=60
stop_timeout_seconds=15

log() { echo "run: $*" >&2; }

if [[ ! -x bin/tally ]]; then
	log "bin/tally not found; run: make build"
	exit 1
fi
mkdir -p "$state_dir/data"

tally_pid=""

# stop_tally stops the tally serve this script started, by its PID.
stop_tally() {
	if [[ -z "$tally_pid" ]] || ! kill -0 "$tally_pid" 2>/dev/null; then
		rm -f "$tally_pidfile"
		return 0
	fi
	log "stopping tally (pid $tally_pid)"
	kill -TERM "$tally_pid" 2>/dev/null || true
	local deadline=$((SECONDS + stop_timeout_seconds))
	while kill -0 "$tally_pid" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			log "tally still running after ${stop_timeout_seconds}s; sending SIGKILL"
			kill -KILL "$tally_pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	rm -f "$tally_pidfile"
}

cleaned_up=false
cleanup() {
	if $cleaned_up; then
		return
	fi
	cleaned_up=true
	stop_tally
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A tally serve left over from an earlier run that was not stopped cleanly.
if [[ -f "$tally_pidfile" ]]; then
	old_pid="$(cat "$tally_pidfile")"
	if [[ "$old_pid" =~ ^[0-9]+$ ]] && kill -0 "$old_pid" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$old_pid/cmdline" 2>/dev/null | grep -q 'tally serve'; then
		log "stopping the tally serve left running by an earlier run (pid $old_pid)"
		tally_pid="$old_pid"
		stop_tally
		tally_pid=""
	fi
	rm -f "$tally_pidfile"
fi
if (exec 3<>"/dev/tcp/${listen%:*}/${listen#*:}") 2>/dev/null; then
	log "$listen is already in use by another program; stop it and try again"
	exit 1
fi

log "starting tally serve on $listen, embedded store in $state_dir/data/store (log: $tally_log)"
# The demo's tools' effect classes, for the safety review (Reliability page):
# its sandbox reruns tests, which changes nothing outside it; a refund pays
# again each time (the demo issues one twice: duplicate_side_effect); a merge
# cannot be undone (the demo merges once without approval: ungated_action).
bin/tally serve --store embedded --listen "$listen" --data-dir "$state_dir/data" \
	--tool-effects 'web_search=read,vector_search=read,fetch_url=read,code_sandbox=idempotent,issue_refund=non_idempotent,merge_pull_request=irreversible' \
	>>"$tally_log" 2>&1 </dev/null &
tally_pid=$!
echo "$tally_pid" >"$tally_pidfile"

deadline=$((SECONDS + ready_timeout_seconds))
until curl -sf --max-time 2 "$endpoint/readyz" >/dev/null 2>&1; do
	if ! kill -0 "$tally_pid" 2>/dev/null; then
		log "tally serve exited; last lines of $tally_log:"
		tail -n 30 "$tally_log" >&2 || true
		exit 1
	fi
	if ((SECONDS >= deadline)); then
		log "tally is not ready after ${ready_timeout_seconds}s ($endpoint/readyz); last lines of $tally_log:"
		tail -n 30 "$tally_log" >&2 || true
		exit 1
	fi
	sleep 0.5
done

# 40 runs of traffic, then an evaluation experiment (30 runs whose verdicts
# the demo posts to the outcomes API): see tools/demo.
log "loading demo runs"
bin/tally demo --endpoint "$endpoint" --runs 40 --seed 1

cat <<INFO

tally is running (pid $tally_pid), embedded store, data in $state_dir/
  UI:        $endpoint/
  API:       curl $endpoint/api/v1/runs
  CLI:       bin/tally runs
  tally log: tail -f $tally_log
Press Ctrl-C to stop tally.
INFO

# wait returns early when a trapped signal arrives; the trap then exits.
wait "$tally_pid" || status=$?
log "tally serve exited (status ${status:-0}); see $tally_log"
exit "${status:-0}"
