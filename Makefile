# dpfil — build, test and run. `make demo` is the main job on the embedded MNIST
# (offline); `make test` is the test suite CI runs.
GO        ?= go
BIN       ?= bin
PKGS      := ./...
TESTFLAGS ?= -count=1 -timeout 20m

.PHONY: all build demo test vet fmt bench clean ptx cuda cuda-check cuda-env

all: build

build:
	$(GO) build -o $(BIN)/dpfil ./cmd/dpfil

demo: build
	$(BIN)/dpfil demo

test:
	$(GO) vet $(PKGS)
	$(GO) test $(TESTFLAGS) $(PKGS)

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

ptx:
	$(NVCC) -ptx -arch=compute_75 -O3 -o cuda/kernels/dpfil.ptx cuda/kernels/dpfil.cu

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
