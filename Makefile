# mtgrpo — build, test and run.  `make demo` and `make test` do their own setup.
SHELL := /bin/bash
.DEFAULT_GOAL := build

GO      ?= go
SHIM    := build/libmtgrpo_torch.so
BIN     := bin/mtgrpo
STAMP   := build/.setup-done

.PHONY: setup shim build test test-scripts test-short bench bench-torch demo fmt vet clean \
	check-fresh check-torch2 check-cuda-build check-docker

# setup: system packages, Go modules, npm assets (see scripts/setup.sh). Re-run with `make setup`.
$(STAMP): scripts/setup.sh scripts/libtorch.sh scripts/npm/package.json
	scripts/setup.sh
	@mkdir -p build && touch $@
setup:
	scripts/setup.sh
	@mkdir -p build && touch $(STAMP)
# The tests also need Debian's chromium (the report page is opened headless).
TEST_STAMP := build/.setup-tests-done
$(TEST_STAMP): $(STAMP)
	scripts/setup.sh --tests
	@touch $@

# shim: the C++ library over libtorch (torch/csrc), built with g++, not by cgo.
$(SHIM): $(STAMP) $(wildcard torch/csrc/*.cpp torch/csrc/*.h) scripts/build_shim.sh scripts/libtorch.sh
	scripts/build_shim.sh
shim: $(SHIM)

build: $(SHIM)
	$(GO) build -o $(BIN) ./cmd/mtgrpo
	$(GO) build -o bin/mtgrpo-sandbox ./cmd/mtgrpo-sandbox

# The packages whose tests honour MTGRPO_TEST_DTYPE: make test runs them a second time in bfloat16
# on the CPU, so dtype bugs show up without a GPU (tolerances are stated beside each comparison).
BF16_PKGS := ./model ./rollout ./grpo

# The packages that do not link libtorch (env, tokenizer, grpo/algo, grpo/memplan, internal/...,
# ...): make test builds and tests them with cgo off, as on a machine without libtorch or a C
# compiler; the others (TORCH_PKGS) link the shim. Computed from the imports, so a package that
# starts importing torch moves by itself.
PKG_KINDS = $(shell $(GO) list -f '{{$$t := "pure"}}{{range .Deps}}{{if eq . "github.com/mtgrpo/mtgrpo/torch"}}{{$$t = "torch"}}{{end}}{{end}}{{if eq .ImportPath "github.com/mtgrpo/mtgrpo/torch"}}{{$$t = "torch"}}{{end}}{{$$t}}:{{.ImportPath}}' ./...)
PURE_PKGS = $(patsubst pure:%,%,$(filter pure:%,$(PKG_KINDS)))
TORCH_PKGS = $(patsubst torch:%,%,$(filter torch:%,$(PKG_KINDS)))

# The cgo-off pass runs beside the shim's (its tests mostly wait on processes, sockets and
# timeouts); its output follows the shim pass's.
test: $(SHIM) $(TEST_STAMP) test-scripts
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) build $(PURE_PKGS)
	scripts/gpu/run.sh --dry-run build/gpu-dry
	@echo "CGO_ENABLED=0 $(GO) test -count=1 -timeout 30m (the torch-free packages) > build/test-nocgo.log &"
	@CGO_ENABLED=0 $(GO) test -count=1 -timeout 30m $(PURE_PKGS) > build/test-nocgo.log 2>&1 & nocgo=$$!; \
	echo "$(GO) test -count=1 -timeout 60m (the packages that link the shim)"; \
	$(GO) test -count=1 -timeout 60m $(TORCH_PKGS); shim=$$?; \
	wait $$nocgo; n=$$?; echo "--- with cgo off:"; cat build/test-nocgo.log; [ $$shim = 0 ] && [ $$n = 0 ]
	MTGRPO_TEST_DTYPE=bfloat16 $(GO) test -count=1 -timeout 30m $(BF16_PKGS)

# test-scripts: the decisions of scripts/libtorch.sh (fake Debian trees, fake PyTorch packages).
# (make test also runs scripts/gpu/run.sh --dry-run: every GPU check's code path on the CPU, small.)
test-scripts:
	scripts/libtorch_test.sh

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

# Setup checks in throwaway Debian roots (root, network, several GB; docs/setup.md has the times).
# check-fresh: the README's two commands on a fresh Debian 12 from a clean clone of HEAD.
# check-torch2: Debian trixie's libtorch 2.6 (CPU) and Python 3.13: shim, torch/model/rollout/env tests.
# check-cuda-build: trixie's CUDA libtorch 2.6: the CUDA shim, the binary and the GPU scripts build
# and link, and stop cleanly where a GPU is needed (not in every CI run: ~8 GB of packages).
# check-docker: the image (BASE=trixie, stand-in cuDNN) built with Docker from imported bases, then
# `mtgrpo version` and `mtgrpo demo --short` in it on the CPU (Docker with BuildKit; dockerd is
# started if none runs).
check-fresh:
	scripts/check_fresh.sh
check-torch2:
	scripts/check_torch2.sh
check-cuda-build:
	scripts/check_cuda_build.sh
check-docker:
	scripts/check_docker.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf build bin
