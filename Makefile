# tether: `make run` opens the console over ./tether.db, `make test` runs every test.
GO      ?= go
BIN     := bin/tether
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
BI      := github.com/tetherhq/tether/internal/buildinfo
LDFLAGS := -s -w -X $(BI).Version=$(VERSION) -X $(BI).Commit=$(COMMIT) -X $(BI).Date=$(DATE)
DB      ?= ./tether.db
# The race detector needs cgo and a C compiler; without them tests run without it.
RACE    ?= $(shell [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v gcc >/dev/null 2>&1 && echo -race)

HELM_VERSION ?= v3.22.0

.PHONY: all build run test bench chaos lint clean tools image

all: lint test build

## build: a static binary in bin/tether (no cgo: the SQLite driver is pure Go)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tether

## run: build and open the console over $(DB), serving the agent API in the same process
run: build
	./$(BIN) --db $(DB) console --serve

## test: every test, with the race detector where cgo is available
## (PostgreSQL tests run when TETHER_TEST_POSTGRES_DSN is set, else skip).
## The console's package drives many programs one after another and takes
## about 7 minutes under -race on a 2-core machine: go test's default
## 10-minute limit per package is too close, so the limit is 30.
test: tools
	$(GO) test -count=1 -timeout 30m $(RACE) ./...

## tools: helm in bin/tools, for the Helm chart's tests (deploy/). Built with
## the Go toolchain; where it cannot be fetched the chart's tests skip.
tools:
	@command -v helm >/dev/null || [ -x bin/tools/helm ] || [ -x "$$($(GO) env GOPATH)/bin/helm" ] \
		|| GOBIN=$(CURDIR)/bin/tools $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION) \
		|| echo "helm could not be installed: the Helm chart's tests will skip"

## image: the container image (Dockerfile), stamped like `make build`
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE) -t tether:$(VERSION) .

## bench: the benchmarks that check tether's speed and memory goals: one table
## of medians next to their targets, also written to bench/results/latest.json
bench:
	$(GO) run ./bench

## chaos: the crash test (not part of test; at most 5 minutes): agents and a
## producer under load while serve is killed with SIGKILL at random moments,
## then the invariants (nothing acknowledged lost, no job acked twice at once
## or finished twice, all ended, integrity_check ok) and a summary line; on
## PostgreSQL too (two replicas, one killed) when TETHER_TEST_POSTGRES_DSN is set
chaos:
	$(GO) test -tags chaos -count=1 -timeout 5m -v -run TestChaos ./internal/chaos/

## lint: formatting, vet, and go.mod/go.sum exactly as `go mod tidy` leaves them
lint:
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin bench/results
