#!/usr/bin/env bash
# bench-workloads.sh: compare "iopath workload" with fio on the same file, in
# the same run, in interleaved rounds, for patterns both tools can express:
#
#   rand-4k-cached   psync 4 KiB random reads of a file in the page cache
#   rand-4k-direct   the same with O_DIRECT
#   seq-1byte-cached psync 1-byte sequential reads of a file in the page cache
#   libaio-qdN       4 KiB random O_DIRECT reads with libaio, N requests in
#                    flight (N = 1, 16, 64)
#   io_uring-qdN     the same with io_uring
#
# It prints each round's IOPS for both tools and, per pattern, the median
# IOPS and the ratio iopath/fio (above 1: iopath issues ops faster).
#
# Settings (environment): ROUNDS (3), SECONDS_PER_RUN (5), SIZE (256m),
# DIR (a new directory under $TMPDIR, removed at the end; must be a disk
# filesystem for O_DIRECT), IOPATH (/tmp/iopath, built here unless BUILD=0),
# FIO (fio),
# CPU (unset: no pinning; a CPU number: run both tools under taskset -c CPU),
# PATTERNS (all nine; or a space-separated subset, e.g.
# PATTERNS="libaio-qd1 libaio-qd16 libaio-qd64 io_uring-qd1 io_uring-qd16 io_uring-qd64").
# Needs fio and jq.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
SIZE=${SIZE:-256m}
IOPATH=${IOPATH:-/tmp/iopath}
FIO=${FIO:-fio}

die() { echo "bench-workloads: $*" >&2; exit 1; }
command -v "$FIO" >/dev/null || die "fio not found: install it (apt-get install fio) or set FIO"
command -v jq >/dev/null || die "jq not found: install it (apt-get install jq)"

cd "$(dirname "$0")/.."
if [[ ${BUILD:-1} != 0 ]]; then
	CGO_ENABLED=0 go build -o "$IOPATH" ./cmd/iopath
fi
[[ -x $IOPATH ]] || die "$IOPATH is not an executable iopath"

if [[ -n ${DIR:-} ]]; then
	work=$(mktemp -d "$DIR/iopath-bench.XXXXXX")
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/iopath-bench.XXXXXX")
fi
trap 'rm -rf "$work"' EXIT
file=$work/data
fstype=$(findmnt -no FSTYPE --target "$work" 2>/dev/null || stat -f -c %T "$work")
[[ $fstype == tmpfs || $fstype == ramfs ]] && echo "warning: $work is on $fstype: O_DIRECT numbers mean nothing there; set DIR to a disk filesystem" >&2

pin=()
[[ -n ${CPU:-} ]] && pin=(taskset -c "$CPU")

# Lay out the file once with real data (iopath writes random bytes and syncs).
"$IOPATH" workload seq-read --file "$file" --size "$SIZE" --count 1 --keep --json >/dev/null 2>&1
cat "$file" >/dev/null # fully cached

# iopath_run ARGS...: prints IOPS.
iopath_run() {
	"${pin[@]}" "$IOPATH" workload "$@" --file "$file" --duration "${SECONDS_PER_RUN}s" --json | jq -r .iops
}

# fio_run ARGS...: prints read IOPS. invalidate=0 keeps the page cache
# (fio drops it by default); norandommap matches iopath's uniform offsets
# with repeats.
fio_run() {
	"${pin[@]}" "$FIO" --name=bench --filename="$file" --size="$SIZE" \
		--invalidate=0 --norandommap --randrepeat=1 --time_based --runtime="$SECONDS_PER_RUN" \
		--output-format=json "$@" | jq -r '.jobs[0].read.iops'
}

async_patterns="libaio-qd1 libaio-qd16 libaio-qd64 io_uring-qd1 io_uring-qd16 io_uring-qd64"
read -r -a patterns <<<"${PATTERNS:-rand-4k-cached rand-4k-direct seq-1byte-cached $async_patterns}"
declare -A iopath_args=(
	[rand-4k-cached]="rand-read --bs 4k"
	[rand-4k-direct]="rand-read --bs 4k --direct"
	[seq-1byte-cached]="read-1byte"
)
declare -A fio_args=(
	[rand-4k-cached]="--ioengine=psync --rw=randread --bs=4k"
	[rand-4k-direct]="--ioengine=psync --rw=randread --bs=4k --direct=1"
	[seq-1byte-cached]="--ioengine=psync --rw=read --bs=1"
)
# The async patterns: the same request stream (4 KiB random O_DIRECT reads),
# both tools with the engine's defaults (fio: one io_submit or
# io_uring_enter per queued request, reaping at least one completion).
for p in $async_patterns; do
	engine=${p%-qd*} depth=${p##*-qd}
	iopath_args[$p]="rand-read --bs 4k --direct --engine $engine --iodepth $depth"
	fio_args[$p]="--ioengine=$engine --rw=randread --bs=4k --direct=1 --iodepth=$depth"
done
declare -A res_iopath res_fio res_ratio
for p in "${patterns[@]}"; do
	[[ -n ${iopath_args[$p]:-} ]] || die "unknown pattern $p: choose from ${!iopath_args[*]}"
done

echo "iopath $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $("$FIO" --version), $(uname -r), $(nproc) CPUs, $fstype, file $SIZE, ${SECONDS_PER_RUN}s per run, $ROUNDS rounds${CPU:+, pinned to CPU $CPU}"
printf '%-18s %5s %14s %14s %7s\n' pattern round iopath_iops fio_iops ratio
for round in $(seq 1 "$ROUNDS"); do
	for p in "${patterns[@]}"; do
		# Alternate which tool goes first, so drift does not favour either.
		# shellcheck disable=SC2086
		if ((round % 2)); then
			a=$(iopath_run ${iopath_args[$p]})
			f=$(fio_run ${fio_args[$p]})
		else
			f=$(fio_run ${fio_args[$p]})
			a=$(iopath_run ${iopath_args[$p]})
		fi
		r=$(awk -v a="$a" -v f="$f" 'BEGIN{print a/f}')
		res_iopath[$p]+="$a "
		res_fio[$p]+="$f "
		res_ratio[$p]+="$r "
		printf '%-18s %5d %14.0f %14.0f %7.3f\n' "$p" "$round" "$a" "$f" "$r"
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo
# ratio: of the medians; paired: median of each round's ratio (the two runs
# of a round are back to back, so this cancels slow drift of the machine).
printf '%-18s %14s %14s %7s %7s\n' "median" iopath_iops fio_iops ratio paired
for p in "${patterns[@]}"; do
	a=$(median <<<"${res_iopath[$p]}")
	f=$(median <<<"${res_fio[$p]}")
	printf '%-18s %14.0f %14.0f %7.3f %7.3f\n' "$p" "$a" "$f" "$(awk -v a="$a" -v f="$f" 'BEGIN{print a/f}')" "$(median <<<"${res_ratio[$p]}")"
done
