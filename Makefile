# dpfil — build, test and run. `make demo` is the main job on the embedded MNIST
# (offline); `make test` is the test suite CI runs.
GO        ?= go
BIN       ?= bin
PKGS      := ./...
TESTFLAGS ?= -count=1 -timeout 20m

.PHONY: all build demo test vet fmt bench clean

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
