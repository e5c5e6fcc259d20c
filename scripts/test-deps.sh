#!/usr/bin/env bash
# Install the test-only dependencies that `make test` needs beyond
# scripts/deps.sh: the Node packages of internal/realclients (the real LLM
# clients and instrumentations, pinned in testdata/node/package-lock.json).
# Idempotent: it installs only when node_modules is missing or was installed
# from another lockfile, and records the lockfile's hash in
# node_modules/.tally-lock-sha256 (the Go test checks the same hash).
set -euo pipefail

dir="$(cd "$(dirname "$0")/.." && pwd)/internal/realclients/testdata/node"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "test-deps: node and npm are required (Node 20+); install them, e.g. apt-get install nodejs npm" >&2
	exit 1
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
