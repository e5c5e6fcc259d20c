# tally: build, test and run locally. See deploy/clickhouse/ for the private
# ClickHouse server and internal/testenv for the services tests start.

GO ?= go

.PHONY: deps build test bench run fmt clean

# Install clickhouse-server, clickhouse-client, prometheus-alertmanager and
# chromium from Debian when missing; does nothing when all are present.
deps:
	scripts/deps.sh

build:
	$(GO) build -o bin/tally ./cmd/tally

# Each test binary with ClickHouse tests starts its own server; -p 2 keeps at
# most two packages (and so two servers) running at once.
test: deps
	$(GO) vet ./...
	$(GO) test -count=1 -p 2 -timeout 40m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

# Start ClickHouse and tally with the data in .tally/, load demo runs, and
# wait; Ctrl-C stops both.
run: deps build
	scripts/run.sh

fmt:
	$(GO) fmt ./...

clean:
	rm -rf bin/
