#!/usr/bin/env bash
# Install the external programs tally's tests and `make run` need, from Debian
# packages: clickhouse-server, clickhouse-client, prometheus-alertmanager,
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

missing=()
has_any clickhouse-server /usr/bin/clickhouse-server /usr/sbin/clickhouse-server /usr/bin/clickhouse ||
	missing+=(clickhouse-server)
has_any clickhouse-client /usr/bin/clickhouse-client /usr/bin/clickhouse ||
	missing+=(clickhouse-client)
has_any /usr/bin/prometheus-alertmanager || missing+=(prometheus-alertmanager)
has_any /usr/bin/chromium || missing+=(chromium)
has_any /usr/share/zookeeper/bin/zkServer.sh || missing+=(zookeeper)
has_any docker-compose /usr/bin/docker-compose || missing+=(docker-compose)
has_any systemd-analyze /usr/bin/systemd-analyze || missing+=(systemd)

if ((${#missing[@]} == 0)); then
	echo "deps: clickhouse-server, clickhouse-client, prometheus-alertmanager, chromium, zookeeper, docker-compose and systemd are installed"
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
