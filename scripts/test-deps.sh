#!/usr/bin/env bash
# Install the test-only dependencies that `make test` needs beyond
# scripts/deps.sh: pytest for the Python client's tests (Debian's
# python3-pytest, when neither python3 nor /usr/bin/python3 imports pytest),
# the Node packages clients/js's adapter tests run against, and those of
# internal/realclients (the real LLM clients and instrumentations, pinned in
# testdata/node/package-lock.json).
# Idempotent: it installs pytest only when missing, and the Node packages
# only when node_modules is missing or was installed from another lockfile;
# it records the lockfile's hash in node_modules/.tally-lock-sha256 (the Go
# test checks the same hash).
set -euo pipefail

# pytest: clients/python's tests and cmd/tally's TestReplayInPython. A
# python3 earlier on PATH (pyenv, a venv) does not see Debian's packages, so
# /usr/bin/python3 counts too (the Makefile and the Go test fall back to it).
if ! python3 -c 'import pytest' >/dev/null 2>&1 && ! /usr/bin/python3 -c 'import pytest' >/dev/null 2>&1; then
	sudo=()
	if [[ "$(id -u)" != 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "test-deps: pytest is missing; run as root: apt-get install python3-pytest" >&2
			exit 1
		fi
		sudo=(sudo)
	fi
	echo "test-deps: installing python3-pytest"
	"${sudo[@]}" apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-pytest
fi

dir="$(cd "$(dirname "$0")/.." && pwd)/internal/realclients/testdata/node"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "test-deps: node and npm are required (Node 20+); install them, e.g. apt-get install nodejs npm" >&2
	exit 1
fi

# clients/js: the real `ai`, `@openai/agents`, `zod` and `@opentelemetry/api`
# its adapter and span tests run against (devDependencies, pinned in
# clients/js/package-lock.json), installed the same way.
js="$(cd "$(dirname "$0")/.." && pwd)/clients/js"
jswant="$(sha256sum "$js/package-lock.json" | cut -d' ' -f1)"
jsstamp="$js/node_modules/.tally-lock-sha256"
if [[ ! -f "$jsstamp" || "$(cat "$jsstamp")" != "$jswant" ]]; then
	echo "test-deps: installing Node packages in $js"
	(cd "$js" && npm ci --omit-lockfile-registry-resolved --no-audit --no-fund)
	echo "$jswant" >"$jsstamp"
fi

want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
stamp="$dir/node_modules/.tally-lock-sha256"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	echo "test-deps: $dir/node_modules is up to date"
	exit 0
fi

echo "test-deps: installing Node packages in $dir"
(cd "$dir" && npm ci --omit-lockfile-registry-resolved --no-audit --no-fund)
echo "$want" >"$stamp"
