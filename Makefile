# tether: `make run` opens the console over ./tether.db, `make test` runs every test,
# `make install` puts tether on your PATH.
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

# make install: $(PREFIX)/bin/tether. The default needs no root, and many
# distributions' shell profiles put ~/.local/bin on PATH;
# `sudo make install PREFIX=/usr/local` installs it for every user.
PREFIX  ?= $(HOME)/.local
# make image: local images, tagged like this (deploy/README.md runs them).
# The release's are ghcr.io/tetherhq/tether and tether-agent at the version.
IMAGE       ?= tether
AGENT_IMAGE ?= tether-agent
IMAGE_TAG   ?= dev

HELM_VERSION ?= v3.22.0
# promtool of Prometheus 3.16 (its Go module's version).
PROMTOOL_VERSION ?= v0.316.0

.PHONY: all build run install test bench bench-fleet chaos lint clean tools image

all: lint test build

## build: a static binary in bin/tether (no cgo: the SQLite driver is pure Go)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tether

## run: build and open the console over $(DB), serving the agent API in the same process
run: build
	./$(BIN) --db $(DB) console --serve

## install: build, then copy the binary to $(PREFIX)/bin (default ~/.local/bin;
## add it to PATH if your shell does not: export PATH="$HOME/.local/bin:$PATH")
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/tether
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; \
	  *) echo "$(PREFIX)/bin is not on PATH: add export PATH=\"$(PREFIX)/bin:\$$PATH\" to your shell's profile";; esac

## test: every test, with the race detector where cgo is available
## (PostgreSQL tests run when TETHER_TEST_POSTGRES_DSN is set, else skip).
## The console's package drives many programs one after another and takes
## about 7 minutes under -race on a 2-core machine: go test's default
## 10-minute limit per package is too close, so the limit is 30.
test: tools
	$(GO) test -count=1 -timeout 30m $(RACE) ./...

## tools: helm and promtool in bin/tools, for the Helm chart's and the alert
## rules' tests (deploy/). Built with the Go toolchain; where one cannot be
## fetched its tests skip.
tools:
	@command -v helm >/dev/null || [ -x bin/tools/helm ] || [ -x "$$($(GO) env GOPATH)/bin/helm" ] \
		|| GOBIN=$(CURDIR)/bin/tools $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION) \
		|| echo "helm could not be installed: the Helm chart's tests will skip"
	@command -v promtool >/dev/null || [ -x bin/tools/promtool ] || [ -x "$$($(GO) env GOPATH)/bin/promtool" ] \
		|| GOBIN=$(CURDIR)/bin/tools $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION) \
		|| echo "promtool could not be installed: the alert rules' tests will skip"

## image: the server's and the agent's container images (Dockerfile, needs
## BuildKit), stamped like `make build`, as $(IMAGE):$(IMAGE_TAG) and
## $(AGENT_IMAGE):$(IMAGE_TAG)
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE) -t $(IMAGE):$(IMAGE_TAG) .
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE) --target agent -t $(AGENT_IMAGE):$(IMAGE_TAG) .

## bench: the benchmarks that check tether's speed and memory goals: one table
## of medians next to their targets, also written to bench/results/latest.json
## (ONLY='Peers|Replicas' runs only the scenarios whose benchmark matches)
ONLY ?=
bench:
	$(GO) run ./bench -only '$(ONLY)'

## bench-fleet: the fleet at scale (about 5 minutes; not part of bench): 50,000
## simulated agents over 127.0.0.x holding long polls and heartbeating every
## 30 s, 200 jobs/s to random clusters, against `tether serve` in its own
## process; serve's memory, the wake-up p99, every heartbeat answered and the
## console's first frame over that fleet, written to bench/results/fleet.json.
## It raises the open-file limit itself (the hard limit needs root), or scales
## the fleet down to it and says so
bench-fleet:
	$(GO) run ./bench/fleet

## chaos: the crash test (not part of test; at most 5 minutes): agents and a
## producer under load while serve is killed with SIGKILL at random moments,
## then the invariants (nothing acknowledged lost, no job acked twice at once
## or finished twice, all ended, integrity_check ok) and a summary line; on
## PostgreSQL too (two replicas, one killed) when TETHER_TEST_POSTGRES_DSN is set
chaos:
	$(GO) test -tags chaos -count=1 -timeout 5m -v -run TestChaos ./internal/testing/chaos/

## lint: formatting, vet, and go.mod/go.sum exactly as `go mod tidy` leaves them
lint:
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin bench/results
