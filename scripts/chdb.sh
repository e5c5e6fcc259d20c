#!/usr/bin/env bash
# Fetch chDB's libchdb.so, the ClickHouse engine the embedded store runs
# in-process, into .tally/lib/ when it is missing. The library comes from the
# npm platform package below, pinned by version and by the SHA-256 of its
# tarball; nothing is used unless the hash matches. Idempotent: a library
# fetched from this pin before (recorded in .tally/lib/libchdb.so.pin) is
# kept. $CHDB_LIB_PATH naming an existing file skips the fetch: tally uses
# that library instead.
#
# Elsewhere (macOS, arm64, no npm): point CHDB_LIB_PATH or `tally serve
# --chdb-lib` at a libchdb.so from chDB's releases; see docs/operations.md.
set -euo pipefail

package=@chdb/lib-linux-x64-gnu
version=26.7.3-stable.1
tarball_sha256=c0d32b129e988f2b9a9a31c9141aecf5e1e2453f9a079efc4d36ab8e3f92b2ad
pin="$package@$version sha256:$tarball_sha256"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$repo_root/.tally/lib"
lib="$dest/libchdb.so"
log() { echo "chdb: $*" >&2; }

if [[ -n "${CHDB_LIB_PATH:-}" ]]; then
	if [[ -f "$CHDB_LIB_PATH" ]]; then
		log "using \$CHDB_LIB_PATH=$CHDB_LIB_PATH"
		exit 0
	fi
	log "\$CHDB_LIB_PATH=$CHDB_LIB_PATH does not exist; unset it to fetch the pinned library into $dest"
	exit 1
fi
if [[ -f "$lib" && "$(cat "$lib.pin" 2>/dev/null)" == "$pin" ]]; then
	log "$lib is up to date ($package@$version)"
	exit 0
fi
if [[ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]]; then
	if [[ -f "$lib" ]]; then
		log "using $lib, put there by hand (the pinned package is for Linux x86_64)"
		exit 0
	fi
	log "the pinned package is for Linux x86_64 (this is $(uname -s)/$(uname -m)): put a libchdb.so for this platform from chDB's releases in $dest or set CHDB_LIB_PATH to it"
	exit 1
fi

if ! command -v npm >/dev/null 2>&1; then
	sudo=()
	if [[ "$(id -u)" != 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			log "npm is needed to fetch $package; run as root: apt-get install npm"
			exit 1
		fi
		sudo=(sudo)
	fi
	log "installing npm (Debian's) to fetch $package"
	"${sudo[@]}" apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y npm
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
log "fetching $package@$version (about 180 MB)"
file="$(cd "$tmp" && npm pack "$package@$version" --silent --pack-destination "$tmp" | tail -n 1)"
if ! echo "$tarball_sha256  $tmp/$file" | sha256sum -c --quiet -; then
	log "$file does not match the pinned SHA-256 $tarball_sha256: not using it"
	exit 1
fi
tar -xzf "$tmp/$file" -C "$tmp" package/libchdb.so
mkdir -p "$dest"
mv -f "$tmp/package/libchdb.so" "$lib.partial"
mv -f "$lib.partial" "$lib"
echo "$pin" >"$lib.pin"
log "installed $lib ($package@$version)"
