#!/usr/bin/env bash
# Rewrites testdata/doctor-SERIES.txt (SERIES: major.minor of the kernel
# release, e.g. 6.1) for this machine's kernel and for the VM kernels
# (scripts/vmtest.sh), from `iopath doctor`. TestDoctorGolden compares against
# these files, all but the exact release in the kernel line. Run as root after
# changing hooks.
set -euo pipefail
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -o iopath ./cmd/iopath
series() { sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$1"; }
./iopath doctor > "testdata/doctor-$(series "$(uname -r)").txt" || true
echo "testdata/doctor-$(series "$(uname -r)").txt"
for k in ${VMTEST_KERNELS:-5.10 6.1 6.12 7.2}; do
  out=$(scripts/vmtest.sh -k "$k" --smp 1 -- ./iopath doctor 2>/dev/null) || true
  release=$(printf '%s\n' "$out" | sed -n 's/^kernel:   Linux \([^ ]*\) .*/\1/p')
  [ -n "$release" ] || { echo "update-doctor-golden: no doctor output on $k" >&2; exit 1; }
  printf '%s\n' "$out" | grep -v '^===' > "testdata/doctor-$(series "$release").txt"
  echo "testdata/doctor-$(series "$release").txt"
done
