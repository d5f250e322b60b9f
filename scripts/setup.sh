#!/usr/bin/env bash
# Prepares a fresh Debian 12 machine (as root) for building, demoing and
# testing iopath. Idempotent: installs only what is missing.
#   clang, llvm, libbpf-dev  regenerate the BPF object (go generate ./bpf) and
#                            check the committed one is not stale
#   fio, bpftrace            baselines for the benchmarks
#   qemu-system-x86, busybox-static, cpio, kmod, xz-utils, e2fsprogs
#                            the VM tests on Debian kernels (scripts/vmtest.sh)
#   postgresql, sqlite3      the database integration tests (cmd/iopath/db_integration_test.go)
#   staticcheck              lint (Go module proxy)
# It also mounts tracefs and bpffs if they are not mounted.
set -euo pipefail

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "scripts/setup.sh: run as root (sudo make ...): it installs packages and mounts tracefs" >&2
    exit 1
  fi
}

if ! command -v go >/dev/null 2>&1; then
  echo "scripts/setup.sh: Go is not installed: install Go ≥ 1.26.8 (go.mod's go line) and put it on PATH" >&2
  exit 1
fi

pkgs=(clang llvm libbpf-dev fio bpftrace jq qemu-system-x86 busybox-static cpio kmod xz-utils e2fsprogs bpftool postgresql sqlite3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  need_root
  echo "scripts/setup.sh: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

gobin=$(go env GOPATH)/bin
if [ ! -x "$gobin/staticcheck" ]; then
  echo "scripts/setup.sh: installing staticcheck"
  go install honnef.co/go/tools/cmd/staticcheck@2026.2.2
fi

if [ "$(id -u)" = 0 ]; then
  [ -e /sys/kernel/tracing/events ] || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
  mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
fi
