# tally: build, test and run locally. See deploy/clickhouse/ for the private
# ClickHouse server and internal/testenv for the services tests start.

GO ?= go

.PHONY: deps deps-run build test bench run fmt clean fuzz docs

# Install clickhouse-server, clickhouse-client, prometheus-alertmanager and
# chromium from Debian, and chDB's libchdb.so (the embedded store's engine,
# pinned npm package) into .tally/lib, when missing; does nothing when all
# are present.
deps:
	scripts/deps.sh test
	scripts/chdb.sh

# Only what running needs (curl, and libchdb.so for the embedded store);
# test-only tools belong to `make test`.
deps-run:
	scripts/deps.sh run
	scripts/chdb.sh

build:
	$(GO) build -o bin/tally ./cmd/tally

# Each test binary with ClickHouse tests starts its own server; -p 2 keeps at
# most two packages (and so two servers) running at once. Then the store,
# query, server and end-to-end suites run again on the embedded engine
# (ClickHouse 26.x, the modern DDL branch); the tests that stop, kill or
# cluster ClickHouse servers (TestFault*, internal/clustertest) are about
# the server and ran in the first pass.
EMBEDDED_TEST_PKGS = ./schema/... ./query/... ./rollup/... ./retention/... ./alerts/... \
	./server/... ./api/... ./ui/... ./support/lease/... ./support/auth/... \
	./internal/realclients/... ./cmd/tally/...
# The clients' tests follow: clients/python with Debian's python3-pytest
# (scripts/test-deps.sh installs it; a python3 earlier on PATH without pytest,
# pyenv's or a venv's, gives way to /usr/bin/python3), clients/js with Node's
# built-in test runner. Both read the vectors Go writes in
# replay/testdata/vectors (replay/vectors_test.go).
PYTHON ?= $(shell python3 -c 'import pytest' >/dev/null 2>&1 && echo python3 || echo /usr/bin/python3)
test: deps
	scripts/test-deps.sh
	$(GO) vet ./...
	$(GO) test -count=1 -p 2 -timeout 40m ./...
	TALLY_TEST_STORE=embedded $(GO) test -count=1 -p 2 -timeout 40m -skip '^TestFault' $(EMBEDDED_TEST_PKGS)
	$(PYTHON) -m pytest -q -p no:cacheprovider clients/python
	node --test clients/js/test/
	$(MAKE) fuzz

# The benchmark suite (tools/bench/cmd/tallybench): starts a private ClickHouse on
# free ports, builds ./cmd/tally, measures the store-dependent figures on the
# server and on the embedded store side by side, prints every figure and writes
# tools/bench/results.json and tools/bench/results.md. BENCH_SPANS sets the spans loaded
# for the read benchmarks: the default is the issue's 10M, about 10 minutes on
# a 2-core machine; make bench BENCH_SPANS=1000000 for a quicker look.
# `make test` runs a tiny version of it (tools/bench/smoke_test.go).
BENCH_SPANS ?= 10000000
bench: deps
	BENCH_SPANS=$(BENCH_SPANS) $(GO) run ./tools/bench/cmd/tallybench --out tools/bench

# Start tally on the embedded store with the data in .tally/, load demo
# runs, and wait; Ctrl-C stops it.
run: deps-run build
	scripts/run.sh

# Regenerate docs/configuration.md from the flag definitions (a test fails
# while it is stale).
docs:
	$(GO) run ./cmd/tally docs configuration > docs/configuration.md

fmt:
	$(GO) fmt ./...

clean:
	rm -rf bin/

# Short fuzzing runs of the decoders and the normalizer; the seed corpora
# also run as plain tests in `go test`. Counted in executions, not seconds:
# a time budget that ends while the fuzzer is minimizing an input makes
# `go test -fuzz` fail with "context deadline exceeded" although nothing
# failed. FUZZX scales every count (FUZZX=10 for a longer run).
FUZZX ?= 1
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $$((50000 * $(FUZZX)))x ./ingest/receiver
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $$((5000 * $(FUZZX)))x ./ingest
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $$((100000 * $(FUZZX)))x ./ingest/rowcodec
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeAgainstPdata$$' -fuzztime $$((100000 * $(FUZZX)))x ./ingest/wire
	$(GO) test -run '^$$' -fuzz '^FuzzJSON$$' -fuzztime $$((100000 * $(FUZZX)))x ./support/canonical
