# invoiced — see README.md. `make run` and `make test` are the two commands.
SHELL := /bin/bash
GO ?= go
BIN := bin/invoiced
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The local PostgreSQL this project's machines run (trust auth). Override
# DATABASE_URL to point elsewhere.
PGHOST_URL ?= postgres://postgres@127.0.0.1:5432
DATABASE_URL ?= $(PGHOST_URL)/invoiced?sslmode=disable
INVOICED_TEST_DATABASE_URL ?= $(PGHOST_URL)/postgres?sslmode=disable
export DATABASE_URL INVOICED_TEST_DATABASE_URL

.PHONY: build run test vet node-deps chat-bundle bench-testdb bench-issue bench-allowance bench-billing-run bench-chat bench-chat-long bench-mcp bench-pdf bench-receivables bench-einvoice clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/invoiced

## run: create the database if missing, migrate, create a first admin if there is none
## (printing its token and a one-time link to set its password), serve on 127.0.0.1:8080.
## On a database without a seller, first-admin.sh sets a placeholder one (invoiced seller set changes it).
run: export INVOICED_ADDR ?= 127.0.0.1:8080
run: build
	@scripts/dev-db.sh
	$(BIN) migrate up
	@scripts/first-admin.sh $(BIN)
	$(BIN) serve

## test: vet and the whole suite against a real PostgreSQL (docs/testing.md), its test databases in
## memory when scripts/test-tablespace.sh can make the tablespace (as root, on a local server).
test: vet node-deps
	@if [ -z "$${INVOICED_TEST_TABLESPACE+set}" ]; then \
	  err=$$(mktemp); \
	  if ts=$$(scripts/test-tablespace.sh "$(INVOICED_TEST_DATABASE_URL)" 2>$$err); then export INVOICED_TEST_TABLESPACE=$$ts; \
	  else echo "make: test databases go on disk (set INVOICED_TEST_TABLESPACE= to say so): scripts/test-tablespace.sh: $$(cat $$err)" >&2; fi; \
	  rm -f $$err; \
	fi; \
	echo "$(GO) test -race -count=1 ./..."; \
	$(GO) test -race -count=1 ./...

# The Node.js packages the tests drive, each folder's pinned by its
# lockfile (and bench/peer's, before bench-chat). They are installed
# here, before the suite, so that a slow registry costs time in this step
# rather than a test's deadline; a folder is installed again when its
# lockfile changes. The flags are
# internal/nodetest's CIFlags (npm's 5-minute wait on a stalled fetch cut
# to 30 s, with retries).
NODE_DIRS := e2e e2e/mcp e2e/facturx web/e2e openapi
NPM_CI := npm ci --no-audit --no-fund --loglevel=error --fetch-timeout=30000 --fetch-retries=4

## node-deps: install the pinned Node.js packages of the test folders (npm ci where a lockfile changed).
node-deps: $(NODE_DIRS:%=%/node_modules/.package-lock.json)

%/node_modules/.package-lock.json: %/package-lock.json
	cd $* && $(NPM_CI)
	@touch $@

vet:
	$(GO) vet ./...

## chat-bundle: rebuild web/static/chat.js from web/chat (pinned by its lockfile); commit the result.
chat-bundle:
	cd web/chat && npm ci --no-audit --no-fund --ignore-scripts && node build.mjs

## bench-testdb: what one test's own database costs, clone + drop (target < 150 ms), on the
## in-memory tablespace CI uses (scripts/test-tablespace.sh; set INVOICED_TEST_TABLESPACE= to measure the disk).
bench-testdb:
	INVOICED_TEST_TABLESPACE=$${INVOICED_TEST_TABLESPACE-$$(scripts/test-tablespace.sh "$(INVOICED_TEST_DATABASE_URL)")} \
	  $(GO) test -run '^$$' -bench BenchmarkPerTestDatabase -benchtime 30x ./store/storetest/

## bench-issue: approved issues/s over HTTP vs a pgbench script of the same SQL (BENCHMARKS.md).
bench-issue:
	$(GO) run ./bench/issue -admin-url "$(INVOICED_TEST_DATABASE_URL)" $(BENCH_ISSUE_FLAGS)

## bench-allowance: issues/s over HTTP under one standing allowance vs one approval each, at 8 and 32 (BENCHMARKS.md).
bench-allowance:
	$(GO) run ./bench/issue -allowance -c 8,32 -db invoiced_bench_allowance -admin-url "$(INVOICED_TEST_DATABASE_URL)" $(BENCH_ALLOWANCE_FLAGS)

## bench-billing-run: one schedules Run with 10,000 falling due: drafts/s, and issues/s under one allowance, beside
## bench-issue's approved issues/s over HTTP at 8 in the same run (BENCHMARKS.md).
bench-billing-run:
	$(GO) run ./bench/issue -billing-run -db invoiced_bench_billing -admin-url "$(INVOICED_TEST_DATABASE_URL)" $(BENCH_BILLING_FLAGS)

## bench-chat: POST /v1/chat (scripted model, one read tool call + text, every run logged) vs an ai@7
## streamText peer, plain and resumable (resumable-stream over the local Redis), at 1/8/32.
bench-chat: bench/peer/node_modules/.package-lock.json
	$(GO) run ./steploop/internal/benchchat

## bench-chat-long: a turn at message 400 of a conversation vs at message 2 and 4, in last-message mode.
bench-chat-long:
	$(GO) run ./steploop/internal/benchchat long

## bench-mcp: get-customer over MCP tools/call (API token, OAuth token) vs POST /v1/capabilities/{name}/invoke, at 1/8/32, and the OAuth token endpoint's issues/s (BENCHMARKS.md).
bench-mcp:
	$(GO) run ./bench/mcp

## bench-pdf: render a one-page invoice PDF: ms per document, and documents/s on 2 cores.
bench-pdf:
	$(GO) test -run '^$$' -bench BenchmarkRender -benchtime 3s -cpu 2 ./document/

## bench-einvoice: UBL, CII and Factur-X documents/s on 2 cores from an issued invoice's document,
## CPU ms per document, and each one's ratio to the PDF render measured in the same run; then UBL and
## CII read from the frozen rows in PostgreSQL and written, against the same read and the PDF. BENCHMARKS.md.
bench-einvoice:
	$(GO) test -run '^$$' -bench BenchmarkEInvoice -benchtime 1x -cpu 2 ./einvoice/
	GOMAXPROCS=2 $(GO) run ./bench/einvoice -admin-url "$(INVOICED_TEST_DATABASE_URL)" $(BENCH_EINVOICE_FLAGS)

## bench-receivables: the receivables report and the ?overdue=true list over HTTP at 10^3 and 10^6 invoices
## (10 % open), then the one-page PDF render (as bench-pdf). BENCHMARKS.md.
bench-receivables:
	$(GO) run ./bench/receivables -admin-url "$(INVOICED_TEST_DATABASE_URL)" $(BENCH_RECEIVABLES_FLAGS)
	$(GO) test -run '^$$' -bench BenchmarkRender -benchtime 3s -cpu 2 ./document/

clean:
	rm -rf bin
