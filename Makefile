# The two set-up commands are `make run` and `make test`.
GO ?= go

.PHONY: run test bench lint build soak

# make build records what the toolchain cannot stamp in every checkout (a
# git worktree, GOFLAGS=-buildvcs=false): the revision, a tree with
# uncommitted changes, and the build time (internal/buildinfo; shown by
# omnigraph version, /healthz and the lock records).
BUILDINFO := github.com/omnigraph-go/omnigraph/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).revision=$(shell git rev-parse HEAD 2>/dev/null) \
	-X $(BUILDINFO).modified=$(shell git status --porcelain 2>/dev/null | grep -q . && echo true) \
	-X $(BUILDINFO).date=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/omnigraph ./cmd/omnigraph

run: build
	bash scripts/run.sh

test:
	bash scripts/test.sh

bench:
	bash scripts/bench.sh

# make soak SEEDS=N [FIRST=F OPS=O DURATION=seconds]: the simulation over
# more seeds (docs/dev/simulation.md).
soak:
	SEEDS="$(SEEDS)" FIRST="$(FIRST)" OPS="$(OPS)" DURATION="$(DURATION)" bash scripts/soak.sh

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
