#!/usr/bin/env bash
# scripts/vmtest-go.sh - build the Go test binaries of some packages and run them all in one boot
# per kernel with scripts/vmtest.sh (each in its package directory, like `go test`).
#
# Usage: scripts/vmtest-go.sh [VMTEST_OPTION]... [PACKAGE]... [-- TESTBINARY_FLAG]...
#   VMTEST_OPTION: the options of scripts/vmtest.sh (-k SPEC, -t SECS, -e N=V, -v, --keep, ...)
#   PACKAGE:       go package patterns (default ./...); packages without tests are skipped
#   TESTBINARY_FLAG: flags for every test binary, in -test.* form (e.g. -test.v -test.run X)
#   --require TEST: fail unless TEST passed on every kernel (needs -test.v; repeatable):
#                   `make vmtest` requires TestDoctorGolden, so each kernel's doctor golden is checked.
# With -test.v it ends with each kernel's slowest tests (where the VM time goes).
# Example: scripts/vmtest-go.sh -k 6.1 ./tracer/... -- -test.v -test.timeout=8m
set -euo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
REPO=$(dirname "$HERE")
VMOPTS=() PKGS=() FLAGS=() REQUIRE=()
while [ $# -gt 0 ]; do
	case $1 in
	-k|--kernel|-t|--timeout|-m|--mem|--smp|--disk-size|-e|--env|-j|--jobs)
		[ $# -ge 2 ] || { echo "vmtest-go: $1 needs a value" >&2; exit 2; }
		VMOPTS+=("$1" "$2"); shift 2 ;;
	-v|--verbose|--keep) VMOPTS+=("$1"); shift ;;
	--require) [ $# -ge 2 ] || { echo "vmtest-go: $1 needs a test name" >&2; exit 2; }
		REQUIRE+=("$2"); shift 2 ;;
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
if [ ${#REQUIRE[@]} -gt 0 ] && [[ " ${FLAGS[*]} " != *" -test.v "* ]]; then
	echo "vmtest-go: --require ${REQUIRE[*]} needs -test.v among the test binary flags" >&2; exit 2
fi
# not exec: the trap must remove $BUILD afterwards
set +e
"$HERE/vmtest.sh" "${VMOPTS[@]}" -- "${RUNS[@]}" | tee "$BUILD/out"
rc=${PIPESTATUS[0]}
set -e
# Per kernel (from the "=== vmtest [KVER] run N" lines): the slowest top-level tests, and the
# required tests that did not pass there.
awk -v req="${REQUIRE[*]}" '
	match($0, /^=== vmtest \[[^]]+\]/) { k = substr($0, 13, RLENGTH - 13); if (!(k in seen)) { seen[k] = 1; ks[++nk] = k } }
	/^--- (PASS|FAIL): [^ ]+ \([0-9.]+s\)$/ {
		name = $3; d = $4; gsub(/[()s]/, "", d)
		n[k]++; tot[k] += d; t[k, n[k]] = d + 0; nm[k, n[k]] = name   # + 0: compare as numbers
		if ($2 == "PASS:") passed[k, name] = 1
	}
	END {
		split(req, r, " "); bad = 0
		for (i = 1; i <= nk; i++) {
			k = ks[i]
			if (n[k] > 0) {
				line = ""
				for (j = 1; j <= 5 && j <= n[k]; j++) {       # top 5 by selection
					best = 0
					for (m = 1; m <= n[k]; m++) if (!used[k, m] && (best == 0 || t[k, m] > t[k, best])) best = m
					used[k, best] = 1; line = line sprintf("%s%s %.0fs", j > 1 ? ", " : "", nm[k, best], t[k, best])
				}
				printf "vmtest-go: %s: %d tests, %.0fs in tests; slowest: %s\n", k, n[k], tot[k], line > "/dev/stderr"
			}
			for (j in r) if (!passed[k, r[j]]) { printf "vmtest-go: FAIL %s: required test %s did not pass (or did not run)\n", k, r[j] > "/dev/stderr"; bad = 1 }
		}
		if (nk == 0 && req != "") { print "vmtest-go: FAIL: no kernel ran any program, required tests " req " did not run" > "/dev/stderr"; bad = 1 }
		exit bad
	}' "$BUILD/out" || { [ $rc -ne 0 ] || rc=1; }
exit $rc
