# The two set-up commands are `make run` and `make test`.
GO ?= go

.PHONY: run test bench lint build soak

build:
	$(GO) build -o bin/omnigraph ./cmd/omnigraph

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
