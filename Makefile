# iopath — see README.md. The two set-up commands are `make demo` and `make test`.
GO      ?= go
BIN     ?= iopath
GOBIN   := $(shell $(GO) env GOPATH)/bin
export CGO_ENABLED = 0

.PHONY: all build setup demo test check-generated vet lint unit integration vmtest bench generate clean

all: build

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/iopath

setup:
	scripts/setup.sh

## demo: the main job: build, then trace a 1-byte read of a cold file and explain it.
demo: setup build
	./$(BIN) demo read-1byte

## test: everything CI runs: stale-generation check, vet/gofmt/staticcheck, unit and
## privileged integration tests on this kernel, then the VM tests on Debian kernels.
test: setup build check-generated lint unit vmtest

generate:
	$(GO) generate ./bpf

check-generated:
	scripts/check-generated.sh

vet:
	$(GO) vet ./...

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GOBIN)/staticcheck ./...

## unit + integration: one `go test` run; privileged tests skip (with the reason) when not root.
unit:
	$(GO) test -count=1 -timeout 20m ./...

## vmtest: the same tests on Debian 5.10, 6.1, 6.12 and 7.2 under qemu (TCG). One vCPU: with two,
## TCG raced the kernel's live text patching (int3 oops in syscall exit while attaching, seen on 6.12).
VMTEST_KERNELS ?= 5.10 6.1 6.12 7.2
VMTEST_FLAGS   ?= -test.timeout=9m
vmtest: build
	scripts/vmtest-go.sh $(addprefix -k ,$(VMTEST_KERNELS)) --smp 1 --disk-size 1536 -t 600 ./... -- $(VMTEST_FLAGS)

bench: build
	scripts/bench.sh

clean:
	rm -f $(BIN)
