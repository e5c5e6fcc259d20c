#!/usr/bin/env bash
# Start a private ClickHouse server for tally development.
#
# Usage: deploy/clickhouse/start.sh [DIR]
#
# DIR (default: <repo>/.tally/clickhouse) holds everything the server writes:
# config.xml and users.xml rendered from the templates beside this script,
# data/, tmp/, user_files/, format_schemas/, log/, the pidfile clickhouse.pid
# and clickhouse.env (the ports in use, in shell syntax, for other scripts).
# Data persists across restarts. The server listens on 127.0.0.1 only and runs
# as the current user; the system service and /var/lib/clickhouse are never used.
#
# Environment:
#   CH_TCP_PORT           native protocol port. Default 9000, or the next free
#                         port after it when 9000 is taken.
#   CH_HTTP_PORT          HTTP port. Default 8123, same fallback.
#   TALLY_CLICKHOUSE_BIN  server binary to run instead of the one found on the
#                         system (clickhouse-server, or clickhouse with the
#                         "server" subcommand).
#
# When the server recorded in DIR/clickhouse.pid is still running, it is
# reused. Installs Debian's clickhouse-server when no server binary exists.
# Stop it with deploy/clickhouse/stop.sh [DIR].
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/../.." && pwd)"
dir="${1:-$repo_root/.tally/clickhouse}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
pidfile="$dir/clickhouse.pid"
envfile="$dir/clickhouse.env"
ready_timeout_seconds=60

log() { echo "clickhouse: $*" >&2; }

# find_server sets server_cmd to the command (an array) that runs the server.
find_server() {
	server_cmd=()
	if [[ -n "${TALLY_CLICKHOUSE_BIN:-}" ]]; then
		if [[ "$(basename "$TALLY_CLICKHOUSE_BIN")" == clickhouse ]]; then
			server_cmd=("$TALLY_CLICKHOUSE_BIN" server)
		else
			server_cmd=("$TALLY_CLICKHOUSE_BIN")
		fi
		return 0
	fi
	local candidate
	for candidate in "$(command -v clickhouse-server 2>/dev/null || true)" \
		/usr/bin/clickhouse-server /usr/sbin/clickhouse-server; do
		if [[ -n "$candidate" && -x "$candidate" ]]; then
			server_cmd=("$candidate")
			return 0
		fi
	done
	for candidate in "$(command -v clickhouse 2>/dev/null || true)" /usr/bin/clickhouse; do
		if [[ -n "$candidate" && -x "$candidate" ]]; then
			server_cmd=("$candidate" server)
			return 0
		fi
	done
	return 1
}

install_server() {
	local sudo=()
	if [[ "$(id -u)" != 0 ]]; then
		if ! command -v sudo >/dev/null; then
			log "clickhouse-server is not installed and this is not root; run: apt-get install clickhouse-server clickhouse-client"
			exit 1
		fi
		sudo=(sudo)
	fi
	log "clickhouse-server not found; installing Debian's clickhouse-server and clickhouse-client"
	"${sudo[@]}" apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y clickhouse-server clickhouse-client
}

# is_our_server PID: the process is alive and runs with this directory's config.
is_our_server() {
	local pid="$1"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--config-file=$dir/config.xml"
}

# port_busy PORT: something accepts connections on 127.0.0.1:PORT.
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pick_port NAME REQUESTED DEFAULT [AVOID]: prints the port to use. An explicitly
# requested port must be free; the default moves to the next free port.
pick_port() {
	local name="$1" requested="$2" default="$3" avoid="${4:-}"
	if [[ -n "$requested" ]]; then
		if port_busy "$requested"; then
			log "$name port $requested (set in the environment) is already in use"
			exit 1
		fi
		echo "$requested"
		return 0
	fi
	local port
	for ((port = default; port < default + 100; port++)); do
		if [[ "$port" != "$avoid" ]] && ! port_busy "$port"; then
			if [[ "$port" != "$default" ]]; then
				log "$name port $default is in use; using $port instead"
			fi
			echo "$port"
			return 0
		fi
	done
	log "no free $name port in $default-$((default + 99))"
	exit 1
}

# render TEMPLATE OUT: copy TEMPLATE to OUT with the placeholders replaced.
render() {
	local xml_dir="$dir" escaped
	xml_dir="${xml_dir//&/&amp;}"
	xml_dir="${xml_dir//</&lt;}"
	xml_dir="${xml_dir//>/&gt;}"
	# Escape what sed treats specially in a replacement: \ & and the | delimiter.
	escaped="$(printf '%s' "$xml_dir" | sed -e 's/[\\&|]/\\&/g')"
	sed -e "s|@@DIR@@|$escaped|g" -e "s|@@TCP_PORT@@|$tcp_port|g" -e "s|@@HTTP_PORT@@|$http_port|g" \
		"$1" >"$2.new"
	mv "$2.new" "$2"
}

server_answers() {
	if command -v curl >/dev/null; then
		[[ "$(curl -sf --max-time 2 "http://127.0.0.1:$http_port/?query=SELECT%201" 2>/dev/null)" == 1 ]]
	else
		port_busy "$tcp_port"
	fi
}

print_ready() {
	echo "ClickHouse ready: native 127.0.0.1:$tcp_port, http 127.0.0.1:$http_port (pid $(cat "$pidfile"), dir $dir)"
}

if [[ -f "$pidfile" ]] && is_our_server "$(cat "$pidfile")"; then
	# shellcheck source=/dev/null
	source "$envfile"
	tcp_port="$CH_TCP_PORT"
	http_port="$CH_HTTP_PORT"
	if server_answers; then
		log "already running"
		print_ready
		exit 0
	fi
	log "pid $(cat "$pidfile") is running but does not answer yet; waiting"
else
	rm -f "$pidfile"
	if ! find_server; then
		install_server
		find_server || {
			log "no clickhouse-server binary after installing; run: apt-get install clickhouse-server"
			exit 1
		}
	fi
	tcp_port="$(pick_port native "${CH_TCP_PORT:-}" 9000)"
	http_port="$(pick_port http "${CH_HTTP_PORT:-}" 8123 "$tcp_port")"
	mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas" "$dir/log"
	render "$script_dir/config.xml.tmpl" "$dir/config.xml"
	render "$script_dir/users.xml.tmpl" "$dir/users.xml"
	printf 'CH_TCP_PORT=%s\nCH_HTTP_PORT=%s\nCH_ADDR=127.0.0.1:%s\n' "$tcp_port" "$http_port" "$tcp_port" >"$envfile"

	# The server runs until stop.sh: setsid puts it in its own session, so a
	# Ctrl-C in this terminal (say, stopping `make run`) does not reach it
	# before the programs using it have stopped, and nohup lets it outlive the
	# terminal. A background job of a script is not a process group leader, so
	# setsid execs in place and $! is the server's PID.
	launcher=(nohup)
	if command -v setsid >/dev/null; then
		launcher=(setsid nohup)
	fi
	"${launcher[@]}" "${server_cmd[@]}" --config-file="$dir/config.xml" >>"$dir/log/stdout.log" 2>&1 </dev/null &
	echo $! >"$pidfile"
	log "started pid $! (${server_cmd[*]})"
fi

pid="$(cat "$pidfile")"
deadline=$((SECONDS + ready_timeout_seconds))
until server_answers; do
	if ! kill -0 "$pid" 2>/dev/null; then
		log "server exited during startup; last log lines:"
		tail -n 20 "$dir/log/stdout.log" "$dir/log/clickhouse-server.err.log" >&2 2>/dev/null || true
		rm -f "$pidfile"
		exit 1
	fi
	if ((SECONDS >= deadline)); then
		log "not ready after ${ready_timeout_seconds}s; see $dir/log/ (still running as pid $pid)"
		exit 1
	fi
	sleep 0.2
done
print_ready
