#!/usr/bin/env bash
# Install the external programs tally's tests and `make run` need, from Debian
# packages. `make run` needs only curl (deps.sh run: its store is the
# embedded engine, which scripts/chdb.sh fetches); the tests also need
# clickhouse-server and clickhouse-client (the server store's suites),
# prometheus-alertmanager,
# chromium, zookeeper (the cluster test's ZooKeeper; not zookeeperd, whose
# service would start on port 2181), docker-compose (validates
# deploy/docker-compose.yaml without a Docker daemon) and systemd
# (systemd-analyze validates deploy/systemd/tally.service). Idempotent: it
# looks for each program's binary first, and runs apt only when one is
# missing, installing only the missing packages.
set -euo pipefail

# has_any PATH...: one of the paths, or a command of that name, is executable.
has_any() {
	local candidate
	for candidate in "$@"; do
		if [[ "$candidate" == /* ]]; then
			[[ -x "$candidate" ]] && return 0
		elif command -v "$candidate" >/dev/null 2>&1; then
			return 0
		fi
	done
	return 1
}

# deps.sh run: what `make run` needs (curl); deps.sh test (the default):
# everything the test suite needs besides.
mode="${1:-test}"
case "$mode" in
run | test) ;;
*)
	echo "deps: usage: scripts/deps.sh [run|test]" >&2
	exit 2
	;;
esac

missing=()
has_any curl /usr/bin/curl || missing+=(curl)
if [[ "$mode" == test ]]; then
	has_any clickhouse-server /usr/bin/clickhouse-server /usr/sbin/clickhouse-server /usr/bin/clickhouse ||
		missing+=(clickhouse-server)
	has_any clickhouse-client /usr/bin/clickhouse-client /usr/bin/clickhouse ||
		missing+=(clickhouse-client)
	has_any /usr/bin/prometheus-alertmanager || missing+=(prometheus-alertmanager)
	has_any /usr/bin/chromium || missing+=(chromium)
	has_any /usr/share/zookeeper/bin/zkServer.sh || missing+=(zookeeper)
	has_any docker-compose /usr/bin/docker-compose || missing+=(docker-compose)
	has_any systemd-analyze /usr/bin/systemd-analyze || missing+=(systemd)
fi

if ((${#missing[@]} == 0)); then
	echo "deps ($mode): everything needed is installed"
	exit 0
fi

sudo=()
if [[ "$(id -u)" != 0 ]]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "deps: missing ${missing[*]}; run as root: apt-get install ${missing[*]}" >&2
		exit 1
	fi
	sudo=(sudo)
fi
echo "deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
