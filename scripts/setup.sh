#!/usr/bin/env bash
# Test set-up (`make test`, `make setup-test`): prepares a fresh Debian 12
# machine (as root) for testing and benchmarking iopath. Idempotent: installs
# only what is missing. `make demo` does not call it: building and running
# iopath needs only Go (the BPF object is committed).
#   clang, llvm, libbpf-dev  regenerate the BPF object (go generate ./bpf) and
#                            check the committed one is not stale
#   gcc, libc6-dev           cgo for `make race` (the race detector needs it)
#   e2fsprogs                mkfs.ext4: test filesystems on loop devices, VM disks
#   fio, bpftrace, bpftool, jq
#                            baselines and tooling for the benchmarks
#   qemu-system-x86, busybox-static, cpio, kmod, xz-utils
#                            the VM tests on Debian kernels (scripts/vmtest.sh)
#   postgresql, sqlite3      the database integration tests (cmd/iopath/db_integration_test.go)
#   prometheus               TestServePrometheus scrapes `iopath serve` with it (started by the
#                            test on loopback with its own config; the system service is not used)
# Go tools (bpf2go, golangci-lint, staticcheck) are pinned in go.mod and built
# on first use by `go tool NAME`: nothing is installed into GOPATH/bin.
set -euo pipefail

if ! command -v go >/dev/null 2>&1; then
  echo "scripts/setup.sh: Go is not installed: install Go ≥ 1.26.8 (go.mod's go line) and put it on PATH" >&2
  exit 1
fi

pkgs=(clang llvm libbpf-dev gcc libc6-dev fio bpftrace jq qemu-system-x86 busybox-static cpio kmod xz-utils
  e2fsprogs bpftool chromium postgresql sqlite3 prometheus)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "scripts/setup.sh: missing ${missing[*]}: run as root (sudo make test) to install them" >&2
    exit 1
  fi
  echo "scripts/setup.sh: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
