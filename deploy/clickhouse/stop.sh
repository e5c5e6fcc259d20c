#!/usr/bin/env bash
# Stop the private ClickHouse server started by deploy/clickhouse/start.sh.
#
# Usage: deploy/clickhouse/stop.sh [DIR]   (default DIR: <repo>/.tally/clickhouse)
#
# Signals only the process recorded in DIR/clickhouse.pid, and only when that
# process is a server running with DIR's config: SIGTERM, then SIGKILL if it
# has not exited after 30 seconds. Data in DIR is kept.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/../.." && pwd)"
dir="${1:-$repo_root/.tally/clickhouse}"
if [[ ! -d "$dir" ]]; then
	echo "clickhouse: $dir does not exist; nothing to stop" >&2
	exit 0
fi
dir="$(cd "$dir" && pwd)"
pidfile="$dir/clickhouse.pid"
stop_timeout_seconds=30

if [[ ! -f "$pidfile" ]]; then
	echo "clickhouse: not running (no $pidfile)" >&2
	exit 0
fi
pid="$(cat "$pidfile")"
if ! [[ "$pid" =~ ^[0-9]+$ ]] || ! kill -0 "$pid" 2>/dev/null ||
	! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--config-file=$dir/config.xml"; then
	echo "clickhouse: pid $pid from $pidfile is not running this server; removing the stale pidfile" >&2
	rm -f "$pidfile"
	exit 0
fi

kill -TERM "$pid"
deadline=$((SECONDS + stop_timeout_seconds))
while kill -0 "$pid" 2>/dev/null; do
	if ((SECONDS >= deadline)); then
		echo "clickhouse: pid $pid still running after ${stop_timeout_seconds}s; sending SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
		break
	fi
	sleep 0.2
done
rm -f "$pidfile"
echo "clickhouse: stopped pid $pid" >&2
