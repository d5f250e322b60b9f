#!/usr/bin/env bash
# bench.sh (`make bench`): what tracing with iopath costs, in one run.
#
#   1 worst case  1-byte reads of a cached 1 MiB file (fio psync): untraced,
#                 `iopath trace -p` and `--comm fio` (default mode), `iopath
#                 trace --all --json >/dev/null`, a minimal bpftrace script on
#                 the same tracepoints (enter/exit of fio's syscall +
#                 mm_filemap_get_pages, per-tid map, in-kernel histogram,
#                 filtered to fio's pid), and the floor: two empty
#                 raw_syscalls programs
#   2 typical     4 KiB cold random reads (file evicted before each round):
#                 untraced, `iopath trace --comm fio`, `-p`, `--json -p` (each
#                 to a tmpfs file, with iopath's CPU per record), and two
#                 bpftrace anchors: a line per request (biosnoop-like) and an
#                 in-kernel latency histogram (biolatency-like); 1 MiB
#                 sequential buffered rewrites of a cached file made clean
#                 before each round: untraced vs `iopath trace -p`
#   3 capacity    go test -bench in tracer/bench_test.go: decoder + engine
#                 events/s on one core, allocs/event
#   4 startup     exec of `iopath trace --ready-file F -p PID` until F exists
#                 (every hook attached), median of 10; bpftrace attaching one
#                 tracepoint until it prints "Attaching"
#   5 memory      iopath's RSS and BPF map memory while it tracks ~1 M dirty
#                 pages (dd of 4 GiB in 1 MiB and in 4 KiB writes, vm.dirty_*
#                 raised, then restored), and whether the bounded dirty_pages
#                 map overflowed (counted; shown with the default bound)
#   6 drops       a 4 KiB ring buffer under --all: lost events are printed
#   7 live        live delivery under pgbench: `pgbench -c 4 -T PG_SECONDS`
#                 (30) on a cluster of its own under `iopath trace --json
#                 --comm postgres`, stdout read through a pipe by
#                 scripts/livelag: lag of each call record after its last
#                 bio's completion (p50/p99/max) and iopath's RSS (skipped
#                 without PostgreSQL)
#   + profile     bpf_stats of iopath's programs during 1-byte cached reads
#                 and 4 KiB cold reads, minus those of as long a run without
#                 fio: which program is hot, ns per call
#
# A configuration (a tracer and how it is started) is one `config` line
# below; a benchmark lists the configurations it interleaves (W_CFGS and
# C_CFGS override the lists of benchmarks 1 and 2).
#
# Ratios are measured in this run: ROUNDS rounds, the configurations of a
# benchmark interleaved (each round starts with the next configuration),
# medians reported. Every traced fio run attaches to the running fio (-p)
# during fio's --startdelay, and checks the tracer was ready before fio's
# measured interval began. Runs in about 4-5 minutes on 2 cores.
#
# Settings (environment):
#   ROUNDS (3), RUNTIME (5, seconds per fio run), STARTDELAY (2, seconds
#   given to the tracer to attach), DIR (parent of the work directory; a disk
#   filesystem, default /var/tmp), SKIP (space-separated section numbers or
#   names to skip: "5 profile"), STARTUP_N (10), PG_SECONDS (30, pgbench's
#   run in 7), OUT (also write the final table to this file).
# Needs root, fio, bpftrace, bpftool, jq, go, curl. Restores every sysctl it
# changes (kernel.bpf_stats_enabled, vm.dirty_*) on exit, Ctrl-C included.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-5}
STARTDELAY=${STARTDELAY:-2}
STARTUP_N=${STARTUP_N:-10}
SKIP=" ${SKIP:-} "

die() { echo "bench: $*" >&2; exit 1; }
note() { echo "bench: $*" >&2; }
[ "$(id -u)" = 0 ] || die "run as root (sudo make bench): tracing needs CAP_BPF and CAP_PERFMON"
for t in fio bpftrace bpftool jq go awk curl; do
	command -v "$t" >/dev/null || die "$t not found: run scripts/setup.sh"
done

cd "$(dirname "$0")/.."
parent=${DIR:-/var/tmp}
work=$(mktemp -d "$parent/iopath-bench.XXXXXX")
shm=$(mktemp -d /dev/shm/iopath-bench.XXXXXX)
bin=$work/iopath

# --- cleanup: restore sysctls, stop what we started, remove files ---------
declare -A saved_sysctl=()
bg_pids=()
save_sysctl() { # NAME...
	local n
	for n in "$@"; do
		[ -n "${saved_sysctl[$n]+x}" ] || saved_sysctl[$n]=$(sysctl -n "$n")
	done
}
restore_sysctls() {
	local n
	# vm.dirty_bytes and vm.dirty_ratio exclude each other (writing one
	# zeroes the other): restore whichever of each pair was in force.
	for n in "${!saved_sysctl[@]}"; do
		case $n in
		vm.dirty_bytes | vm.dirty_ratio | vm.dirty_background_bytes | vm.dirty_background_ratio) ;;
		*) sysctl -qw "$n=${saved_sysctl[$n]}" || note "could not restore $n=${saved_sysctl[$n]}" ;;
		esac
	done
	local pair b r
	for pair in "dirty_bytes dirty_ratio" "dirty_background_bytes dirty_background_ratio"; do
		read -r b r <<<"$pair"
		[ -n "${saved_sysctl[vm.$b]+x}" ] || continue
		if [ "${saved_sysctl[vm.$b]}" != 0 ]; then
			sysctl -qw "vm.$b=${saved_sysctl[vm.$b]}" || note "could not restore vm.$b"
		else
			sysctl -qw "vm.$r=${saved_sysctl[vm.$r]}" || note "could not restore vm.$r"
		fi
	done
	saved_sysctl=()
}
bg_keep=
pg_data= # the PostgreSQL cluster of benchmark 7 while it runs
cleanup() {
	local p
	[ -z "$bg_keep" ] || kill "$bg_keep" 2>/dev/null || true
	[ -z "$pg_data" ] || (cd / && runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_data" -m immediate -w stop >/dev/null 2>&1) || true
	for p in "${bg_pids[@]}"; do
		kill -INT "$p" 2>/dev/null || true
	done
	sleep 0.2
	for p in "${bg_pids[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
	restore_sysctls
	rm -rf "$work" "$shm"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

skip() { [[ $SKIP == *" $1 "* || $SKIP == *" $2 "* ]]; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END{if (NR==0) print "nan"; else print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.3f", a/b; else print "nan" }'; }
now_ns() { date +%s%N; }
ms_since() { echo $((($(now_ns) - $1) / 1000000)); }
si() { awk -v v="$1" 'BEGIN{ if (v >= 1e6) printf "%.2f M", v/1e6; else if (v >= 1e3) printf "%.1f k", v/1e3; else printf "%.0f ", v }'; }
mib() { awk -v v="$1" 'BEGIN{ printf "%.1f MiB", v/1048576 }'; }
# wait_for CMD... : poll CMD every 5 ms, for at most 20 s.
wait_for() {
	local i
	for ((i = 0; i < 4000; i++)); do
		"$@" && return 0
		sleep 0.005
	done
	return 1
}

# stop PID: SIGINT (iopath prints its summary, bpftrace its maps), then
# SIGTERM and SIGKILL if it has not exited within 10 s and 5 s.
stop() {
	local p=$1 i
	kill -INT "$p" 2>/dev/null || true
	for ((i = 0; i < 1000; i++)); do
		kill -0 "$p" 2>/dev/null || break
		((i == 200)) && { note "pid $p ignored SIGINT for 10 s: SIGTERM"; kill -TERM "$p" 2>/dev/null || true; }
		((i == 300)) && { note "pid $p ignored SIGTERM for 5 s: SIGKILL"; kill -KILL "$p" 2>/dev/null || true; }
		sleep 0.05
	done
	wait "$p" 2>/dev/null || true
}

# --- build and describe the machine --------------------------------------
CGO_ENABLED=0 go build -trimpath -o "$bin" ./cmd/iopath

rev=$(git rev-parse --short HEAD 2>/dev/null || echo "?")
git diff --quiet HEAD -- bpf cmd tracer 2>/dev/null || rev="$rev+uncommitted"
cpu_model=$(awk -F': *' '/^model name/{print $2; exit}' /proc/cpuinfo)
hyp=$(grep -q hypervisor /proc/cpuinfo && echo ", virtual machine" || true)
src=$(findmnt -no SOURCE --target "$work" | head -1)
fstype=$(findmnt -no FSTYPE --target "$work" | head -1)
disk=$(lsblk -ndo PKNAME "$src" 2>/dev/null | head -1)
[ -n "$disk" ] || disk=$(basename "$src")
disk_desc=$(lsblk -ndo NAME,SIZE,ROTA,TRAN,MODEL "/dev/$disk" 2>/dev/null | awk '{m=""; for(i=5;i<=NF;i++) m=m" "$i; printf "%s %s %s%s%s", $1, $2, ($3=="1" ? "rotational" : "non-rotational"), ($4!="" ? " "$4 : ""), m}')
drv=$(basename "$(readlink -f "/sys/block/$disk/device/driver" 2>/dev/null)" 2>/dev/null || true)
[ -z "$drv" ] || [ "$drv" = driver ] || disk_desc="$disk_desc, driver $drv"
mem_gib=$(awk '/^MemTotal/{printf "%.0f", $2/1048576}' /proc/meminfo)
load() { cut -d' ' -f1-3 /proc/loadavg; }

header=$(
	echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "machine: $(nproc) CPUs ($cpu_model$hyp), ${mem_gib} GiB RAM, kernel $(uname -r)"
	echo "disk:    $disk_desc; work dir $work on $fstype ($src)"
	echo "tools:   iopath $rev, $(go env GOVERSION), $(fio --version), bpftrace $(bpftrace --version | awk '{print $2}'), bpftool $(bpftool version | awk 'NR==1{print $2}')"
	echo "method:  $ROUNDS interleaved rounds per ratio, medians; fio runs ${RUNTIME}s after a ${STARTDELAY}s startdelay in which the tracer attaches (-p)"
)
echo "$header"
l=$(load)
echo "load:    $l at start (1/5/15 min)"
awk -v l="${l%% *}" 'BEGIN{exit !(l > 0.5)}' && note "warning: load average ${l%% *} > 0.5: other work is running; ratios will be noisy"

declare -a table=()
row() { table+=("$(printf '| %s | %s | %s | %s | %s | %s |' "$@")"); }
verdict() { # VALUE OP TARGET -> ok|MISS
	awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN{ ok = (op == ">=") ? (v >= t) : (v <= t); print (v == "nan") ? "?" : (ok ? "ok" : "MISS") }'
}

# --- fio and tracer runners ----------------------------------------------
# `iopath trace -p` ends by itself once every traced process has exited; a
# sleeping keeper process, traced too (-p), holds it until we have read its
# loss counters and program statistics after fio's exit. It does no IO.
sleep 100000 &
keeper=$!
bg_keep=$keeper

# Configurations: one `config` line each. config NAME KIND LABEL COMMAND
#   KIND     iopath (ready when --ready-file "$rf" exists; loss counters and
#            CPU per record read) or bpftrace (ready when its output says
#            "Attaching", as bpftrace and scripts/floor print); none for the
#            untraced baseline
#   LABEL    the table's configuration column
#   COMMAND  eval'd in the background during fio's startdelay, with $fp
#            (fio's pid), $rf (ready file), $out (the tracer's output file,
#            on tmpfs), $keeper, $bin and $work set
# A benchmark names the configurations it interleaves (rounds NAME "CFG...").
declare -A cfg_kind=() cfg_label=() cfg_cmd=()
config() { cfg_kind[$1]=$2 cfg_label[$1]=$3 cfg_cmd[$1]=$4; }
config base none "untraced" ''
config pid iopath "iopath trace -p FIO >FILE (default mode: stories)" \
	'"$bin" trace --ready-file "$rf" -p "$fp" -p "$keeper" >"$out"'
config comm iopath "iopath trace --comm fio >FILE (default mode: stories)" \
	'"$bin" trace --ready-file "$rf" --comm fio >"$out"'
config json iopath "iopath trace --json -p FIO >FILE" \
	'"$bin" trace --json --ready-file "$rf" -p "$fp" -p "$keeper" >"$out"'
config all iopath "iopath trace --all --json -p FIO >/dev/null" \
	'"$bin" trace --all --json --ready-file "$rf" -p "$fp" -p "$keeper" >/dev/null'
config profile iopath "iopath trace -p FIO, kernel.bpf_stats_enabled=1" \
	'"$bin" trace --ready-file "$rf" -p "$fp" -p "$keeper" >"$out"'
config bpftrace bpftrace "bpftrace, 3 tracepoints (pread64 enter/exit, get_pages)" \
	'bpftrace "$work/min.bt" "$fp" >"$out"'
config floor bpftrace "floor: two empty tp_btf programs on raw_syscalls sys_enter/sys_exit (scripts/floor)" \
	'"$work/floor" >"$out"'
config biosnoop bpftrace "bpftrace biosnoop-like: a line per request (issue/complete by dev+sector) >FILE" \
	'bpftrace "$work/biosnoop.bt" >"$out"'
config biolatency bpftrace "bpftrace biolatency-like: in-kernel histogram of request latency" \
	'bpftrace "$work/biolatency.bt" >"$out"'

config top iopath "iopath top --json -p FIO >/dev/null (in-kernel aggregates, no per-call records)" \
	'"$bin" top --json --ready-file "$rf" -p "$fp" -p "$keeper" >/dev/null'
config serve iopath "iopath serve -p FIO, /metrics scraped every 1 s" \
	'"$bin" serve --listen 127.0.0.1:19465 --ready-file "$rf" -p "$fp" -p "$keeper" >/dev/null'

# The floor of iopath's call hooks on a kernel without fentry: two empty
# tp_btf programs on raw_syscalls (registering them turns on syscall
# tracing for every task). bpftrace 0.17 has no raw tracepoints, and its
# classic tracepoints cost more than the floor (perf's record buffer).
CGO_ENABLED=0 go build -trimpath -o "$work/floor" ./scripts/floor
# The two bpftrace anchors of the cold-read benchmark (machine-wide, as
# biosnoop and biolatency are).
cat >"$work/biosnoop.bt" <<'BT'
tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
	printf("%d %s %d %d %d\n", args->dev, args->rwbs, args->sector, args->nr_sector, (nsecs - @start[args->dev, args->sector]) / 1000);
	delete(@start[args->dev, args->sector]);
}
BT
cat >"$work/biolatency.bt" <<'BT'
tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
	@usecs = hist((nsecs - @start[args->dev, args->sector]) / 1000);
	delete(@start[args->dev, args->sector]);
}
BT

# proc_cpu_ns PID: the CPU time of PID's threads, ns (schedstat: exact,
# where /proc/PID/stat counts 10 ms ticks).
proc_cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d\n", s}'; }
# records_in FILE: the call records in a tracer's output (JSON lines of
# type syscall, or story headers "name(args) target [...] -> ..."); for
# bpftrace, its output lines.
records_in() {
	case $1 in
	iopath) grep -c -E '^\{"type":"syscall"|^[a-z0-9_]+\(.*\] -> ' "$2" || true ;;
	*) grep -c -v -E '^Attaching|^$|^@' "$2" || true ;;
	esac
}

# run_fio CONFIG OUTJSON FIOARGS...: runs fio (as threads, so -p PID covers
# its job) and, during its startdelay, the tracer CONFIG on its pid. Sets
# ready_ms (time from fio's start to tracer ready), lost (ring buffer losses
# read from iopath's counters map before it stops), tracer_out, cpu_us (the
# tracer's CPU from ready to fio's exit, µs), recs (records it wrote), and
# run_load (the 1-minute load average at the end).
ready_ms=0 lost=0 tracer_out= fio_pid= cpu_us=0 recs=0 run_load=
run_fio() {
	local cfg=$1 fout=$2
	shift 2
	[ -n "${cfg_kind[$cfg]+x}" ] || die "unknown configuration $cfg"
	local kind=${cfg_kind[$cfg]} t0 fp tp= rf=$shm/ready out=$shm/tracer.out c0=0
	rm -f "$rf" "$out"
	t0=$(now_ns)
	fio --name=bench --thread --ioengine=psync --startdelay="$STARTDELAY" \
		--output-format=json --output="$fout" "$@" >/dev/null &
	fp=$!
	fio_pid=$fp
	bg_pids+=("$fp")
	tracer_out=$out
	if [ "$kind" != none ]; then
		# exec: $! is the tracer itself (its CPU time, fds, signals).
		(eval "exec ${cfg_cmd[$cfg]}") 2>"$shm/tracer.err" &
		tp=$!
	fi
	ready_ms=0 cpu_us=0 recs=0
	if [ -n "$tp" ]; then
		bg_pids+=("$tp")
		if [ "$kind" = bpftrace ]; then
			wait_for grep -qs Attaching "$out" || die "bpftrace did not attach ($cfg): $(cat "$shm/tracer.err")"
		else
			wait_for test -e "$rf" || die "iopath did not attach ($cfg): $(cat "$shm/tracer.err")"
		fi
		ready_ms=$(ms_since "$t0")
		c0=$(proc_cpu_ns "$tp")
		if [ "$cfg" = serve ]; then
			# A Prometheus-like scraper: one scrape a second.
			(while kill -0 "$tp" 2>/dev/null; do curl -s -o /dev/null http://127.0.0.1:19465/metrics; sleep 1; done) &
			bg_pids+=("$!")
		fi
		[ "$cfg" = profile ] && bpftool -j prog show >"$work/progs0.json"
		if ((ready_ms > STARTDELAY * 1000 - 300)); then
			note "warning: $cfg was ready ${ready_ms} ms after fio started, too close to its ${STARTDELAY}s startdelay: raise STARTDELAY"
		fi
	fi
	wait "$fp" || die "fio failed ($cfg): $(cat "$fout")"
	lost=0
	if [ -n "$tp" ]; then
		cpu_us=$((($(proc_cpu_ns "$tp") - c0) / 1000))
	fi
	if [ "$kind" = iopath ]; then
		lost=$(iopath_counter "$tp" 0)
		if [ "$cfg" = profile ]; then
			# Program statistics from ready to fio's exit, and over
			# as long again without fio (the machine's other system
			# calls, which the raw_syscalls programs also see).
			local p0 p1 dt
			p0=$(now_ns)
			bpftool -j prog show >"$work/progs1.json"
			dt=$(((p0 - t0) / 1000000 - ready_ms))
			sleep "$(awk -v ms="$dt" 'BEGIN{printf "%.3f", ms/1000}')"
			bpftool -j prog show >"$work/progs2.json"
			iopath_prog_ids "$tp" | jq -s . >"$work/prog_ids.json"
		fi
	fi
	[ -z "$tp" ] || stop "$tp"
	[ -e "$out" ] && recs=$(records_in "$kind" "$out")
	run_load=$(cut -d' ' -f1 /proc/loadavg)
	bg_pids=()
}

# iopath_maps PID: "id name" of the BPF maps iopath PID holds.
iopath_maps() {
	local f id
	for f in /proc/"$1"/fdinfo/*; do
		id=$(awk '/^map_id:/{print $2}' "$f" 2>/dev/null)
		[ -n "$id" ] && echo "$id $(bpftool -j map show id "$id" | jq -r .name)"
	done
	return 0
}
# iopath_prog_ids PID: ids of the BPF programs iopath PID holds.
iopath_prog_ids() {
	awk '/^prog_id:/{print $2}' /proc/"$1"/fdinfo/* 2>/dev/null | sort -u
}
# iopath_counter PID IDX: sum over CPUs of iopath's counters[IDX] (0: ring buffer losses).
iopath_counter() {
	local id
	id=$(iopath_maps "$1" | awk '$2=="counters"{print $1}')
	[ -n "$id" ] || { echo nan; return; }
	bpftool -j map dump id "$id" | jq --argjson i "$2" '[.[] | select(.formatted.key == $i) | .formatted.values[].value] | add // 0'
}

# Calls of PID in a text summary (traced-call coverage check).
summary_calls() { awk -v p="$2" '$1==p && $3 ~ /^[0-9]+$/ {print $3; exit}' "$1"; }

# rounds NAME "CFG..." FIOARGS... : interleaved rounds; collects per
# configuration one metric per round (the function metric_<NAME> OUTJSON),
# and the tracer's losses, CPU per record and the load average.
declare -A res=() extra=()
rounds() {
	local name=$1 cfgs=($2)
	shift 2
	local r i n=${#cfgs[@]} cfg out v
	for ((r = 0; r < ROUNDS; r++)); do
		for ((i = 0; i < n; i++)); do
			cfg=${cfgs[$(((r + i) % n))]}
			out=$work/$name.$cfg.$r.json
			"prepare_$name"
			run_fio "$cfg" "$out" "$@"
			v=$("metric_$name" "$out")
			res[$name.$cfg]+="$v "
			extra[$name.load]+="$run_load "
			local check="" ios per=""
			ios=$(jq '[.jobs[0].read.total_ios, .jobs[0].write.total_ios] | add' "$out")
			if [ "${cfg_kind[$cfg]}" = iopath ] && [ -s "$tracer_out" ] && [[ $cfg != json ]]; then
				# Coverage: the tracer counted (at least) every fio call.
				check=", traced calls $(summary_calls "$tracer_out" "$fio_pid")"
			fi
			if [ "${cfg_kind[$cfg]}" != none ]; then
				extra[$name.$cfg.lost]+="$lost "
				if ((recs >= 1000)); then
					per=$(awk -v c="$cpu_us" -v n="$recs" 'BEGIN{printf "%.2f", c/n}')
					extra[$name.$cfg.cpu]+="$per "
					per=", cpu ${cpu_us} us / $recs records = $per us"
				else
					per=", cpu ${cpu_us} us"
				fi
			fi
			printf '  %-3s round %d  %-10s %14s  (fio ios %s%s)  ready %4s ms  lost %s%s  load %s\n' "$name" $((r + 1)) "$cfg" "$(si "$v")$unit" \
				"$ios" "$check" "$ready_ms" "$lost" "$per" "$run_load"
		done
	done
}

# report NAME TITLE UNIT "CFG..." : the table's rows of benchmark NAME, the
# untraced baseline first; targets from target[NAME.CFG] (">= 0.92").
declare -A target=()
report() {
	local name=$1 title=$2 u=$3 cfgs=($4) base m rr c tgt v notes lr
	base=$(median <<<"${res[$name.base]}")
	lr=$(tr ' ' '\n' <<<"${extra[$name.load]}" | grep . | sort -g | sed -n '1p;$p' | paste -sd- -)
	row "$title" "untraced" "$(si "$base")$u" "1.000" "" "load $lr"
	for c in "${cfgs[@]}"; do
		[ "$c" = base ] && continue
		m=$(median <<<"${res[$name.$c]}")
		rr=$(ratio "$m" "$base")
		tgt=${target[$name.$c]:-} v=""
		[ -n "$tgt" ] && v=$(verdict "$rr" "${tgt%% *}" "${tgt##* }")
		notes=$v
		if [ "${cfg_kind[$c]}" = iopath ]; then
			notes+="${notes:+; }lost $(median <<<"${extra[$name.$c.lost]}")/run"
		fi
		if [ -n "${extra[$name.$c.cpu]:-}" ]; then
			notes+="${notes:+; }CPU $(median <<<"${extra[$name.$c.cpu]}") us/record"
		fi
		row "" "${cfg_label[$c]}" "$(si "$m")$u" "$rr" "$tgt" "$notes"
	done
}

# cpu_row NAME CFG LABEL: iopath's CPU per record in benchmark NAME's
# configuration CFG (user + system time from ready to fio's exit / records
# written), against the target of 1.5 µs per streamed call.
cpu_row() {
	local m
	m=$(median <<<"${extra[$1.$2.cpu]:-}")
	row "" "$3" "$m us/record" "" "<= 1.5 us" "$(verdict "$m" "<=" 1.5)"
}

# --- 1: worst case ------------------------------------------------------
small=$work/small
head -c 1048576 /dev/urandom >"$small"
cat "$small" >/dev/null
sync "$small"
# fio's psync engine reads with pread64: the bpftrace baseline hooks the
# same syscall (sys_enter_read would see none of fio's reads).
cat >"$work/min.bt" <<'BT'
tracepoint:syscalls:sys_enter_pread64 /pid == $1/ { @start[tid] = nsecs; }
tracepoint:filemap:mm_filemap_get_pages /pid == $1/ { @lookups[tid] = @lookups[tid] + 1; }
tracepoint:syscalls:sys_exit_pread64 /@start[tid]/ { @lat = hist(nsecs - @start[tid]); delete(@start[tid]); delete(@lookups[tid]); }
BT
prepare_w() { :; }
metric_w() { jq '.jobs[0].read.iops' "$1"; }
unit=reads/s
timed=(--time_based --runtime="$RUNTIME")
ptimed=(--time_based --runtime=3) # profile runs
wfio0=(--filename="$small" --size=1m --rw=read --bs=1 --invalidate=0)
wfio=("${wfio0[@]}" "${timed[@]}")
W_CFGS=${W_CFGS:-"base pid comm all bpftrace floor"}
target[w.pid]=">= 0.80" target[w.comm]=">= 0.80"
if ! skip 1 worst; then
	echo
	echo "== 1. worst case: 1-byte reads of a cached 1 MiB file (fio psync, reads/s)"
	rounds w "$W_CFGS" "${wfio[@]}"
	report w "1 worst case: 1-byte cached reads (fio psync)" "reads/s" "$W_CFGS"
fi

# --- profile: which BPF program is hot -----------------------------------
# profile_run NAME LABEL FIOARGS...: one fio run under iopath (default mode)
# with kernel.bpf_stats_enabled=1; prints iopath's programs by total run
# time, and per fio call. Sets prof_ns (BPF ns per fio call) and prof_hot.
prof_ns=0 prof_hot= prof_all=
profile_run() {
	local name=$1 label=$2
	shift 2
	save_sysctl kernel.bpf_stats_enabled
	sysctl -qw kernel.bpf_stats_enabled=1
	run_fio profile "$work/profile.$name.json" "$@"
	sysctl -qw kernel.bpf_stats_enabled="${saved_sysctl[kernel.bpf_stats_enabled]}"
	local ios sel
	ios=$(jq '[.jobs[0].read.total_ios, .jobs[0].write.total_ios] | add' "$work/profile.$name.json")
	# Per program: runs and run time during fio's run (progs1 - progs0),
	# and the same without fio (progs2 - progs1, as long): what the
	# machine's other processes cost iopath's programs meanwhile.
	jq -n --slurpfile ids "$work/prog_ids.json" --slurpfile a "$work/progs0.json" --slurpfile b "$work/progs1.json" \
		--slurpfile c "$work/progs2.json" '
		def stats($s): [$s[0][] | select(.id as $id | $ids[0] | index($id)) | {key: "\(.id)", value: {name, cnt: (.run_cnt // 0), ns: (.run_time_ns // 0)}}] | from_entries;
		stats($a) as $a | stats($b) as $b | stats($c) as $c |
		[$b | keys[] as $k | {name: $b[$k].name, cnt: ($b[$k].cnt - ($a[$k].cnt // 0)), ns: ($b[$k].ns - ($a[$k].ns // 0)),
			bgcnt: (($c[$k].cnt // 0) - $b[$k].cnt), bgns: (($c[$k].ns // 0) - $b[$k].ns)} | select(.cnt > 0)]' >"$work/prof.$name.json"
	echo "  $label: $(si "$ios")fio calls; iopath's programs (ids its fds held), by run time during fio's run;"
	echo "  \"idle\": the same programs over as long again without fio (other processes' calls and switches):"
	sel='sort_by(-.ns)'
	jq -r --argjson ios "$ios" "$sel"'
		| (["program", "runs", "avg_ns", "total_ms", "ns_per_fio_call", "idle_runs", "idle_ms", "fio_ns_per_call"] | @tsv),
		  (.[0:10][] | [.name, .cnt, (.ns / .cnt | floor), (.ns / 1e6 | floor), (.ns / $ios | floor), .bgcnt, (.bgns / 1e6 | floor), ([(.ns - .bgns) / $ios, 0] | max | floor)] | @tsv),
		  (["all", ([.[].cnt] | add), "-", ([.[].ns] | add / 1e6 | floor), ([.[].ns] | add / $ios | floor), ([.[].bgcnt] | add), ([.[].bgns] | add / 1e6 | floor), ([([.[].ns] | add) - ([.[].bgns] | add), 0] | max / $ios | floor)] | @tsv)
	' "$work/prof.$name.json" | column -t | sed 's/^/    /'
	prof_ns=$(jq -r --argjson ios "$ios" '[([.[].ns] | add) - ([.[].bgns] | add), 0] | max / $ios | floor' "$work/prof.$name.json")
	prof_all=$(jq -r --argjson ios "$ios" '[.[].ns] | add / $ios | floor' "$work/prof.$name.json")
	prof_hot=$(jq -r --argjson ios "$ios" 'map(.f = ([(.ns - .bgns) / $ios, 0] | max | floor)) | sort_by(-.f) | .[0:3] | map("\(.name) \(.f) ns") | join(", ")' "$work/prof.$name.json")
}
big=$work/cold
make_cold() {
	[ -e "$big" ] || fio --name=layout --filename="$big" --size=1g --rw=write --bs=1m --ioengine=psync --end_fsync=1 \
		--output-format=terse >/dev/null
}
cfio=(--filename="$big" --size=1g --rw=randread --bs=4k --invalidate=1)
if ! skip profile profile; then
	echo
	echo "== profile: iopath's BPF programs (kernel.bpf_stats_enabled=1, one run each; runs count every process's events:"
	echo "   the raw_syscalls hooks fire on every system call, the block and sched hooks on every request and switch)"
	profile_run worst "1-byte cached reads" "${wfio0[@]}" "${ptimed[@]}"
	row "  profile" "BPF time per 1-byte cached read (minus the idle machine's)" "$prof_ns ns" "" "" "all: $prof_all ns; top: $prof_hot"
	make_cold
	dd if="$big" iflag=nocache count=0 status=none
	profile_run cold "4 KiB cold random reads" "${cfio[@]}" "${ptimed[@]}"
	row "  profile" "BPF time per 4 KiB cold read (minus the idle machine's)" "$prof_ns ns" "" "<= 2000 ns" "$(verdict "$prof_ns" "<=" 2000); all: $prof_all ns; top: $prof_hot"
fi

# --- 2: typical ----------------------------------------------------------
C_CFGS=${C_CFGS:-"base comm pid json top serve biosnoop biolatency floor"}
target[c.top]=">= 0.97" target[c.serve]=">= 0.97"
target[c.comm]=">= 0.92" target[c.pid]=">= 0.92" target[c.json]=">= 0.90"
target[s.pid]=">= 0.98"
if ! skip 2 typical; then
	echo
	echo "== 2. typical: 4 KiB cold random reads (reads/s) and 1 MiB sequential buffered writes (MiB/s)"
	make_cold
	prepare_c() {
		# Evict the file (POSIX_FADV_DONTNEED on all of it); fio's
		# --invalidate=1 does it again when it opens the file.
		dd if="$big" iflag=nocache count=0 status=none
	}
	metric_c() { jq '.jobs[0].read.iops' "$1"; }
	unit=reads/s
	rounds c "$C_CFGS" "${cfio[@]}" "${timed[@]}"
	cached=$(fincore -nb -o RES "$big" 2>/dev/null | awk '{print $1}')
	[ -n "$cached" ] && echo "  (after the last round $(mib "$cached") of the 1 GiB file was cached: every read was a miss)"
	rm -f "$big"

	# Rewrites of a cached 1 GiB file made clean (synced) before each round:
	# the first pass turns every page dirty (the tracked event), later
	# passes rewrite dirty pages. Writing a new file instead would measure
	# this VM's first touch of memory returned to the host (virtio-balloon
	# free page reporting): 0.5-6 GB/s from one run to the next.
	wfile=$work/wfile
	fio --name=layout --filename="$wfile" --size=1g --rw=write --bs=1m --ioengine=psync --end_fsync=1 \
		--output-format=terse >/dev/null
	prepare_s() { sync "$wfile"; }
	metric_s() { jq '.jobs[0].write.bw_bytes / 1048576' "$1"; }
	unit=" MiB/s"
	rounds s "base pid" --filename="$wfile" --size=1g --rw=write --bs=1m --invalidate=0 "${timed[@]}"
	rm -f "$wfile"
	sync

	report c "2 typical: 4 KiB cold random reads" "reads/s" "$C_CFGS"
	for c in comm pid json; do
		[[ " $C_CFGS " == *" $c "* ]] && cpu_row c "$c" "iopath CPU per record: ${cfg_label[$c]}"
	done
	report s "2 typical: 1 MiB sequential buffered rewrites of a cached 1 GiB file" " MiB/s" "base pid"
fi

# --- 3: capacity ---------------------------------------------------------
if ! skip 3 capacity; then
	echo
	echo "== 3. capacity: decoder + engine on one core (go test -bench, tracer/bench_test.go)"
	go test -run '^$' -bench 'Dispatch' -benchtime 1s -count 1 -cpu 1 ./tracer >"$work/gobench.txt" 2>&1 ||
		die "go test -bench failed: $(tail -20 "$work/gobench.txt")"
	# metric VALUE UNIT pairs follow the iteration count.
	awk '/^BenchmarkDispatch/ {
		name=$1; sub(/^BenchmarkDispatch/, "", name); sub(/-[0-9]+$/, "", name)
		for (i = 3; i < NF; i++) m[$(i+1)] = $i
		printf "%s %s %s %s %s\n", name, m["events/s"], m["ns/event"], m["allocs/event"], m["B/event"]
	}' "$work/gobench.txt" >"$work/gobench.parsed"
	printf '  %-14s %14s %10s %13s %9s\n' stream events/s ns/event allocs/event B/event
	while read -r n e ns a by; do
		printf '  %-14s %14.0f %10.0f %13.2f %9.0f\n' "$n" "$e" "$ns" "$a" "$by"
	done <"$work/gobench.parsed"
	first=1
	while read -r n e ns a by; do
		tgt="" v=""
		if [[ $n == *Discard ]]; then tgt=">= 3 M/s"; v=$(verdict "$e" ">=" 3000000); fi
		row "$([ $first = 1 ] && echo "3 capacity: Dispatch + Engine, 1 core" || true)" "$n" "$(si "$e")events/s, $(printf '%.2f' "$a") allocs/event" "" "$tgt" "$v"
		first=0
	done <"$work/gobench.parsed"
fi

# --- 4: startup ----------------------------------------------------------
if ! skip 4 startup; then
	echo
	echo "== 4. startup: exec until every hook is attached (median of $STARTUP_N)"
	sleep 600 &
	target=$!
	bg_pids+=("$target")
	echo "tracepoint:syscalls:sys_enter_pread64 /pid == $target/ { @n = count(); }" >"$work/one.bt"
	st_i="" st_b="" stop_i=""
	for ((k = 0; k < STARTUP_N; k++)); do
		rf=$shm/ready.$k
		t0=$(now_ns)
		"$bin" trace --quiet --ready-file "$rf" -p "$target" >/dev/null 2>"$shm/startup.err" &
		tp=$!
		wait_for test -e "$rf" || die "iopath did not attach: $(cat "$shm/startup.err")"
		st_i+="$(ms_since "$t0") "
		t1=$(now_ns)
		stop "$tp"
		stop_i+="$(ms_since "$t1") "

		t0=$(now_ns)
		bpftrace "$work/one.bt" >"$shm/bt.out" 2>"$shm/bt.err" &
		bp=$!
		wait_for grep -q Attaching "$shm/bt.out" || die "bpftrace did not attach: $(cat "$shm/bt.err")"
		st_b+="$(ms_since "$t0") "
		stop "$bp"
	done
	kill "$target" 2>/dev/null || true
	wait "$target" 2>/dev/null || true
	bg_pids=()
	echo "  iopath ready (ms):          $st_i"
	echo "  iopath stop after SIGINT:   $stop_i"
	echo "  bpftrace 'Attaching' (ms):  $st_b"
	mi=$(median <<<"$st_i") mb=$(median <<<"$st_b") ms=$(median <<<"$stop_i")
	row "4 startup: exec until attached (median of $STARTUP_N)" "iopath trace --ready-file F -p PID" "$mi ms (stop: $ms ms)" "" "<= 100 ms" "$(verdict "$mi" "<=" 100)"
	row "" "bpftrace, 1 tracepoint, until \"Attaching\"" "$mb ms" "" "" ""
fi

# --- 5: memory -----------------------------------------------------------
# mem_run LABEL MAXDIRTY BS COUNT: dd under `iopath trace --json`; records
# peak RSS, BPF map memory, peak live dirty_pages entries (the BPF
# dirty_tracked counter), and the summary's evictions and losses.
mem_run() {
	local label=$1 maxd=$2 bs=$3 count=$4 f=$work/dirty out=$shm/mem.json rf=$shm/mem.ready t0
	rm -f "$rf" "$f"
	local q=()
	[ "$bs" = 4k ] && q=(--quiet) # 1 M records: print only the summary
	t0=$(now_ns)
	"$bin" trace --json "${q[@]}" --max-dirty-pages "$maxd" --ready-file "$rf" -- \
		dd if=/dev/zero of="$f" bs="$bs" count="$count" status=none >"$out" 2>"$shm/mem.err" &
	local tp=$! rss=0 hwm=0 m
	bg_pids+=("$tp")
	wait_for test -e "$rf" || die "iopath did not attach: $(cat "$shm/mem.err")"
	local mapmem=0 dirtymem=0 bss= id name b
	while read -r id name; do
		b=$(bpftool -j map show id "$id" | jq .bytes_memlock)
		mapmem=$((mapmem + b))
		[ "$name" = dirty_pages ] && dirtymem=$b
		[ "$name" = .bss ] && bss=$id
	done < <(iopath_maps "$tp")
	local peak=0 n
	while kill -0 "$tp" 2>/dev/null; do
		m=$(awk '/^VmHWM/{print $2}' /proc/"$tp"/status 2>/dev/null || true)
		[ -n "$m" ] && ((m > hwm)) && hwm=$m
		n=$(bpftool -j map dump id "$bss" 2>/dev/null | jq '[.[0].formatted.value[".bss"][] | .dirty_tracked // empty][0] // 0' 2>/dev/null || true)
		[ -n "$n" ] && ((n > peak)) && peak=$n
		sleep 0.1
	done
	wait "$tp" || die "iopath trace -- dd failed: $(cat "$shm/mem.err")"
	local secs
	secs=$(awk -v ns=$(($(now_ns) - t0)) 'BEGIN{printf "%.1f", ns/1e9}')
	bg_pids=()
	rm -f "$f"
	local sum ev pend lostc dirtied
	sum=$(tail -n 1 "$out")
	ev=$(jq '.map_evictions.dirty_pages' <<<"$sum")
	pend=$(jq '.dirty_pages_pending' <<<"$sum")
	lostc=$(jq '.lost_events' <<<"$sum")
	dirtied=$(jq '[.pids[].dirtied_pages] | add // 0' <<<"$sum")
	printf '  dd bs=%-3s x %-7s --max-dirty-pages %-7s %5ss: peak RSS %s, BPF maps %s (dirty_pages %s); %s pages dirtied, peak %s map entries (folios), evictions %s, lost events %s, pending at exit %s\n' \
		"$bs" "$count" "$maxd" "$secs" "$(mib $((hwm * 1024)))" "$(mib "$mapmem")" "$(mib "$dirtymem")" "$dirtied" "$peak" "$ev" "$lostc" "$pend"
	local ovf="no overflow"
	((ev > 0)) && ovf="overflowed: $ev evictions counted"
	local gib
	gib=$(awk -v b="$bs" -v c="$count" 'BEGIN{m = (b == "4k") ? 4096 : 1048576; printf "%g", m*c/1073741824}')
	row "$label" "dd bs=$bs ($gib GiB), --max-dirty-pages $maxd" "RSS $(mib $((hwm * 1024))), maps $(mib "$mapmem") (dirty_pages $(mib "$dirtymem")); $dirtied pages in $peak entries" "" "bounded, counted" "$ovf; lost $lostc"
}
if ! skip 5 memory; then
	echo
	echo "== 5. memory: tracking ~1 M dirty pages (dd; vm.dirty_bytes 6 GiB, dirty_background_bytes 5 GiB, restored after)"
	free_kib=$(df -Pk "$work" | awk 'NR==2{print $4}')
	avail_kib=$(awk '/^MemAvailable/{print $2}' /proc/meminfo)
	if ((free_kib < 10 * 1024 * 1024)); then
		echo "  skipped: $(mib $((free_kib * 1024))) free on $work, needs 10 GiB"
		row "5 memory" "skipped" "$(mib $((free_kib * 1024))) free disk < 10 GiB" "" "" ""
	elif ((avail_kib < 8 * 1024 * 1024)); then
		echo "  skipped: $(mib $((avail_kib * 1024))) of memory available, needs 8 GiB to keep 4 GiB dirty"
		row "5 memory" "skipped" "MemAvailable $(mib $((avail_kib * 1024))) < 8 GiB" "" "" ""
	else
		save_sysctl vm.dirty_bytes vm.dirty_ratio vm.dirty_background_bytes vm.dirty_background_ratio
		sysctl -qw vm.dirty_bytes=$((6 << 30))
		sysctl -qw vm.dirty_background_bytes=$((5 << 30))
		# 1 MiB writes get large folios (ext4 on 6.x): few map entries.
		mem_run "5 memory: 4 GiB dirty" 1100000 1M 4096
		# 4 KiB writes: one folio per page, ~1 M entries.
		mem_run "" 1100000 4k 1048576
		# 2 GiB of 4 KiB writes with the default bound: the map fills, the
		# evictions are counted.
		mem_run "" 262144 4k 524288
		restore_sysctls
	fi
fi

# --- 6: forced drops -----------------------------------------------------
if ! skip 6 drops; then
	echo
	echo "== 6. forced drops: --ringbuf-size 4096 --all on 1-byte reads"
	"$bin" trace --ringbuf-size 4096 --all -- "$bin" workload read-1byte --file "$small" --duration 2s >"$shm/drops.out" 2>"$shm/drops.err" ||
		die "trace with a 4 KiB ring buffer failed: $(tail -5 "$shm/drops.err")"
	line=$(grep '^lost events:' "$shm/drops.out" || true)
	echo "  summary says: ${line:-NOTHING (lost events not printed)}"
	n=$(sed -n 's/^lost events: \([0-9]*\);.*/\1/p' <<<"$line")
	row "6 drops: --ringbuf-size 4096 --all" "read-1byte workload, 2 s" "\"${line%%;*}\"" "" "lost > 0, printed" "$([ -n "$n" ] && ((n > 0)) && echo ok || echo MISS)"
fi

# --- 7: live delivery under pgbench -------------------------------------
# Issue 12: a call's record is due once the call returned and its last bio
# completed; a live consumer (a pipe) must get it within 1 s, and iopath's
# RSS must stay bounded. 30 s of pgbench by default (the integration test
# TestTracePgbenchLive runs 60 s and asserts both).
PG_SECONDS=${PG_SECONDS:-30}
if ! skip 7 live; then
	echo
	echo "== 7. live delivery: pgbench -c 4 -T $PG_SECONDS under iopath trace --json --comm postgres, stdout read through a pipe (scripts/livelag)"
	pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
	if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ] || [ ! -x "$pg_bin/pgbench" ]; then
		echo "  skipped: PostgreSQL is not installed (apt-get install postgresql postgresql-contrib)"
		row "7 live delivery" "skipped" "PostgreSQL not installed" "" "" ""
	else
		CGO_ENABLED=0 go build -trimpath -o "$work/livelag" ./scripts/livelag
		aspg() { (cd / && runuser -u postgres -- "$pg_bin/$1" "${@:2}"); }
		chmod 755 "$work" # postgres creates its files and socket inside
		pg_data=$work/pg
		mkdir -m 700 "$pg_data" "$work/pgsock"
		chown postgres:postgres "$pg_data" "$work/pgsock"
		pgc=(-h "$work/pgsock" -U postgres)
		aspg initdb -D "$pg_data" -A trust -U postgres >"$work/pg.init" 2>&1 || die "initdb failed: $(tail -5 "$work/pg.init")"
		aspg pg_ctl -D "$pg_data" -w -l "$pg_data/log" -o "-k $work/pgsock -c listen_addresses='' -c max_wal_size=64MB -c min_wal_size=32MB -c autovacuum=off" \
			start >/dev/null || die "PostgreSQL did not start: $(tail -5 "$pg_data/log")"
		aspg pgbench "${pgc[@]}" -i -s 10 -q postgres >"$work/pg.init" 2>&1 || die "pgbench -i failed: $(tail -5 "$work/pg.init")"
		aspg psql "${pgc[@]}" -qc CHECKPOINT postgres >/dev/null
		fifo=$shm/live.fifo rf=$shm/live.ready
		mkfifo "$fifo"
		# iopath's shell opens the FIFO (blocking until livelag opens
		# it) and then execs iopath: $tp is iopath's pid.
		"$bin" trace --json --comm postgres --ready-file "$rf" >"$fifo" 2>"$shm/live.trace.err" &
		tp=$!
		bg_pids+=("$tp")
		"$work/livelag" --rss-pid "$tp" <"$fifo" >"$shm/live.out" 2>"$shm/live.err" &
		lp=$!
		wait_for test -e "$rf" || die "iopath did not attach: $(cat "$shm/live.trace.err")"
		aspg pgbench "${pgc[@]}" -c 4 -T "$PG_SECONDS" postgres >"$work/pg.run" 2>&1 || die "pgbench failed: $(tail -5 "$work/pg.run")"
		tps=$(awk '/^tps/{printf "%.0f", $3; exit}' "$work/pg.run")
		stop "$tp"
		bg_pids=()
		wait "$lp" || die "livelag failed: $(cat "$shm/live.err")"
		aspg pg_ctl -D "$pg_data" -m fast -w stop >/dev/null
		pg_data=
		declare -A lv=()
		for kv in $(cat "$shm/live.out"); do lv[${kv%%=*}]=${kv#*=}; done
		echo "  $(cat "$shm/live.out") (pgbench: $tps tps)"
		row "7 live delivery: pgbench -c 4 -T $PG_SECONDS ($tps tps)" "iopath trace --json --comm postgres, stdout read through a pipe" \
			"record lag after its last bio: p50 ${lv[lag_p50_ms]} ms, p99 ${lv[lag_p99_ms]} ms, max ${lv[lag_max_ms]} ms ($(si "${lv[records]}")records); RSS max $(mib $((lv[rss_max_kib] * 1024))) (first 10 s $(mib $((lv[rss_first10s_kib] * 1024))), last 10 s $(mib $((lv[rss_last10s_kib] * 1024))))" \
			"" "p99 <= 1000 ms" "$(verdict "${lv[lag_p99_ms]}" "<=" 1000)"
	fi
fi

# --- the table -----------------------------------------------------------
{
	echo
	echo "$header"
	echo "load:    $l at start, $(load) at end"
	echo
	echo "| benchmark | configuration | result | ratio | target | verdict / notes |"
	echo "|---|---|---|---|---|---|"
	printf '%s\n' "${table[@]}"
} | tee "${OUT:-/dev/null}"
