#!/usr/bin/env bash
# scripts/vmtest-go.sh - build the Go test binaries of some packages and run them all in one boot
# per kernel with scripts/vmtest.sh (each in its package directory, like `go test`).
#
# Usage: scripts/vmtest-go.sh [VMTEST_OPTION]... [PACKAGE]... [-- TESTBINARY_FLAG]...
#   VMTEST_OPTION: the options of scripts/vmtest.sh (-k SPEC, -t SECS, -e N=V, -v, --keep, ...)
#   PACKAGE:       go package patterns (default ./...); packages without tests are skipped
#   TESTBINARY_FLAG: flags for every test binary, in -test.* form (e.g. -test.v -test.run X)
# Example: scripts/vmtest-go.sh -k 6.1 ./tracer/... -- -test.v -test.timeout=8m
set -euo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
REPO=$(dirname "$HERE")
VMOPTS=() PKGS=() FLAGS=()
while [ $# -gt 0 ]; do
	case $1 in
	-k|--kernel|-t|--timeout|-m|--mem|--smp|--disk-size|-e|--env|-j|--jobs)
		[ $# -ge 2 ] || { echo "vmtest-go: $1 needs a value" >&2; exit 2; }
		VMOPTS+=("$1" "$2"); shift 2 ;;
	-v|--verbose|--keep) VMOPTS+=("$1"); shift ;;
	-h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
	--) shift; FLAGS=("$@"); break ;;
	-*) echo "vmtest-go: unknown option $1" >&2; exit 2 ;;
	*) PKGS+=("$1"); shift ;;
	esac
done
[ ${#PKGS[@]} -gt 0 ] || PKGS=(./...)

cd "$REPO"
BUILD=$(mktemp -d "${TMPDIR:-/tmp}/vmtest-go.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT
RUNS=() n=0
while read -r ip dir; do
	[ -n "$ip" ] || continue
	n=$((n + 1)); mkdir -p "$BUILD/$n"; bin=$BUILD/$n/${ip##*/}.test
	echo "vmtest-go: building $ip" >&2
	CGO_ENABLED=0 go test -c -o "$bin" "$ip"
	[ ${#RUNS[@]} -eq 0 ] || RUNS+=(---)
	RUNS+=(-C "$dir" "$bin" "${FLAGS[@]}")
done < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "${PKGS[@]}")
[ $n -gt 0 ] || { echo "vmtest-go: no test files in ${PKGS[*]}" >&2; exit 0; }
# not exec: the trap must remove $BUILD afterwards
rc=0; "$HERE/vmtest.sh" "${VMOPTS[@]}" -- "${RUNS[@]}" || rc=$?
exit $rc
