# mtgrpo — build, test and run.  `make demo` and `make test` do their own setup.
SHELL := /bin/bash
.DEFAULT_GOAL := build

GO      ?= go
SHIM    := build/libmtgrpo_torch.so
BIN     := bin/mtgrpo
STAMP   := build/.setup-done

.PHONY: setup shim build test test-short bench bench-torch demo fmt vet clean

# setup: system packages, Go modules, npm assets (see scripts/setup.sh). Re-run with `make setup`.
$(STAMP): scripts/setup.sh scripts/libtorch.sh scripts/npm/package.json
	scripts/setup.sh
	@mkdir -p build && touch $@
setup:
	scripts/setup.sh
	@mkdir -p build && touch $(STAMP)

# shim: the C++ library over libtorch (torch/csrc), built with g++, not by cgo.
$(SHIM): $(STAMP) $(wildcard torch/csrc/*.cpp torch/csrc/*.h) scripts/build_shim.sh scripts/libtorch.sh
	scripts/build_shim.sh
shim: $(SHIM)

build: $(SHIM)
	$(GO) build -o $(BIN) ./cmd/mtgrpo
	$(GO) build -o bin/mtgrpo-sandbox ./cmd/mtgrpo-sandbox

test: $(SHIM)
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 60m ./...

test-short: $(SHIM)
	$(GO) test -count=1 -short ./...

bench: $(SHIM)
	$(GO) test -run '^$$' -bench . -benchtime 1x ./... | tee build/bench.txt

# bench-torch: the binding's per-call overhead and matmul rate against libtorch called from C++
# (docs/bench/torch.md).
bench-torch: $(SHIM)
	scripts/bench_torch.sh

demo: build
	$(BIN) demo

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf build bin
