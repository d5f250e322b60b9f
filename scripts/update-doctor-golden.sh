#!/usr/bin/env bash
# Rewrites testdata/doctor-RELEASE.txt for this machine's kernel and for the
# VM kernels (scripts/vmtest.sh), from `iopath doctor`. TestDoctorGolden
# compares against these files. Run as root after changing hooks.
set -euo pipefail
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -o iopath ./cmd/iopath
./iopath doctor > "testdata/doctor-$(uname -r).txt"
for k in ${VMTEST_KERNELS:-6.1 6.12}; do
  out=$(scripts/vmtest.sh -k "$k" --smp 1 -- ./iopath doctor 2>/dev/null)
  release=$(printf '%s\n' "$out" | sed -n 's/^kernel:   Linux \([^ ]*\) .*/\1/p')
  printf '%s\n' "$out" | grep -v '^===' > "testdata/doctor-$release.txt"
  echo "testdata/doctor-$release.txt"
done
