#!/usr/bin/env bash
# bench.sh (`make bench`): what tracing with iopath costs, in one run.
#
#   1 worst case  1-byte reads of a cached 1 MiB file (fio psync): untraced,
#                 `iopath trace -p` (default mode), `iopath trace --all --json
#                 >/dev/null`, and a minimal bpftrace script on the same
#                 tracepoints (enter/exit of fio's syscall + mm_filemap_get_pages,
#                 per-tid map, in-kernel histogram, filtered to fio's pid)
#   2 typical     4 KiB cold random reads (file evicted before each round) and
#                 1 MiB sequential buffered rewrites of a cached file made
#                 clean before each round: untraced vs `iopath trace -p`
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
#   + profile     bpf_stats of iopath's programs during 1-byte cached reads
#                 and 4 KiB cold reads: which program is hot, ns per call
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
#   names to skip: "5 profile"), STARTUP_N (10), OUT (also write the final
#   table to this file).
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
cleanup() {
	local p
	[ -z "$bg_keep" ] || kill "$bg_keep" 2>/dev/null || true
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
# run_fio CONFIG OUTJSON FIOARGS...: runs fio (as threads, so -p PID covers
# its job) and, during its startdelay, the tracer CONFIG on its pid:
#   base     nothing
#   iopath   iopath trace -p PID (default mode), stdout to a tmpfs file
#   all      iopath trace --all --json -p PID > /dev/null
#   bpftrace bpftrace $work/min.bt PID
#   top      iopath top --json -p PID > /dev/null (in-kernel aggregates, issue 17)
#   serve    iopath serve -p PID, scraped every second by curl
#   profile  iopath (default mode) with kernel.bpf_stats_enabled=1, program stats saved
# Sets ready_ms (time from fio's start to tracer ready), lost (ring buffer
# losses read from iopath's counters map before it stops), tracer_out.
ready_ms=0 lost=0 tracer_out= fio_pid=
run_fio() {
	local cfg=$1 out=$2
	shift 2
	local t0 fp tp= rf=$shm/ready
	rm -f "$rf"
	t0=$(now_ns)
	fio --name=bench --thread --ioengine=psync --startdelay="$STARTDELAY" \
		--output-format=json --output="$out" "$@" >/dev/null &
	fp=$!
	fio_pid=$fp
	bg_pids+=("$fp")
	tracer_out=$shm/tracer.out
	case $cfg in
	base) ;;
	iopath | profile)
		"$bin" trace --ready-file "$rf" -p "$fp" -p "$keeper" >"$tracer_out" 2>"$shm/tracer.err" &
		tp=$!
		;;
	all)
		"$bin" trace --all --json --ready-file "$rf" -p "$fp" -p "$keeper" >/dev/null 2>"$shm/tracer.err" &
		tp=$!
		;;
	bpftrace)
		bpftrace "$work/min.bt" "$fp" >"$tracer_out" 2>"$shm/tracer.err" &
		tp=$!
		;;
	top)
		"$bin" top --json --ready-file "$rf" -p "$fp" -p "$keeper" >/dev/null 2>"$shm/tracer.err" &
		tp=$!
		;;
	serve)
		"$bin" serve --listen 127.0.0.1:19465 --ready-file "$rf" -p "$fp" -p "$keeper" >/dev/null 2>"$shm/tracer.err" &
		tp=$!
		(while kill -0 "$tp" 2>/dev/null; do curl -s -o /dev/null http://127.0.0.1:19465/metrics; sleep 1; done) &
		;;
	esac
	ready_ms=0
	if [ -n "$tp" ]; then
		bg_pids+=("$tp")
		if [ "$cfg" = bpftrace ]; then
			wait_for grep -q Attaching "$tracer_out" || die "bpftrace did not attach: $(cat "$shm/tracer.err")"
		else
			wait_for test -e "$rf" || die "iopath did not attach: $(cat "$shm/tracer.err")"
		fi
		ready_ms=$(ms_since "$t0")
		if ((ready_ms > STARTDELAY * 1000 - 300)); then
			note "warning: $cfg was ready ${ready_ms} ms after fio started, too close to its ${STARTDELAY}s startdelay: raise STARTDELAY"
		fi
	fi
	wait "$fp" || die "fio failed ($cfg): $(cat "$out")"
	lost=0
	if [[ $cfg == iopath || $cfg == all || $cfg == profile ]]; then
		lost=$(iopath_counter "$tp" 0)
		if [ "$cfg" = profile ]; then
			bpftool -j prog show >"$work/progs.json"
			iopath_prog_ids "$tp" | jq -s . >"$work/prog_ids.json"
		fi
	fi
	[ -z "$tp" ] || stop "$tp"
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

# rounds NAME "CFG..." FIOARGS... : interleaved rounds; fills res_<cfg> with
# one metric per round via the function metric_<NAME> OUTJSON.
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
			local check="" ios
			ios=$(jq '[.jobs[0].read.total_ios, .jobs[0].write.total_ios] | add' "$out")
			if [ "$cfg" = iopath ] && [ -s "$tracer_out" ]; then
				# Coverage: the tracer counted (at least) every fio call.
				check=", traced calls $(summary_calls "$tracer_out" "$fio_pid")"
			fi
			[ "$cfg" != base ] && extra[$name.$cfg.lost]+="$lost "
			printf '  %-3s round %d  %-9s %14s  (fio ios %s%s)  ready %4s ms  lost %s\n' "$name" $((r + 1)) "$cfg" "$(si "$v")$unit" \
				"$ios" "$check" "$ready_ms" "$lost"
		done
	done
}

# --- 1: worst case ------------------------------------------------------
small=$work/small
head -c 1048576 /dev/urandom >"$small"
cat "$small" >/dev/null
sync "$small"
# fio's psync engine reads with pread64: the bpftrace baseline hooks the
# same syscall (sys_enter_read would see none of fio's reads).
cat >"$work/min.bt" <<'EOF'
tracepoint:syscalls:sys_enter_pread64 /pid == $1/ { @start[tid] = nsecs; }
tracepoint:filemap:mm_filemap_get_pages /pid == $1/ { @lookups[tid] = @lookups[tid] + 1; }
tracepoint:syscalls:sys_exit_pread64 /@start[tid]/ { @lat = hist(nsecs - @start[tid]); delete(@start[tid]); delete(@lookups[tid]); }
EOF
prepare_w() { :; }
metric_w() { jq '.jobs[0].read.iops' "$1"; }
unit=reads/s
timed=(--time_based --runtime="$RUNTIME")
ptimed=(--time_based --runtime=3) # profile runs
wfio0=(--filename="$small" --size=1m --rw=read --bs=1 --invalidate=0)
wfio=("${wfio0[@]}" "${timed[@]}")
if ! skip 1 worst; then
	echo
	echo "== 1. worst case: 1-byte reads of a cached 1 MiB file (fio psync, reads/s)"
	rounds w "base iopath all bpftrace" "${wfio[@]}"
	base=$(median <<<"${res[w.base]}")
	row "1 worst case: 1-byte cached reads (fio psync)" "untraced" "$(si "$base")reads/s" "1.000" "" ""
	for c in iopath all bpftrace; do
		m=$(median <<<"${res[w.$c]}")
		rr=$(ratio "$m" "$base")
		case $c in
		iopath) label="iopath trace -p (default)" tgt=">= 0.85" v=$(verdict "$rr" ">=" 0.85) ;;
		all) label="iopath trace --all --json >/dev/null" tgt="" v="lost $(median <<<"${extra[w.all.lost]}")/run" ;;
		bpftrace) label="bpftrace, 3 tracepoints (pread64 enter/exit, get_pages)" tgt="" v="" ;;
		esac
		row "" "$label" "$(si "$m")reads/s" "$rr" "$tgt" "$v"
	done
fi

# --- profile: which BPF program is hot -----------------------------------
# profile_run NAME LABEL FIOARGS...: one fio run under iopath (default mode)
# with kernel.bpf_stats_enabled=1; prints iopath's programs by total run
# time, and per fio call. Sets prof_ns (BPF ns per fio call) and prof_hot.
prof_ns=0 prof_hot=
profile_run() {
	local name=$1 label=$2
	shift 2
	save_sysctl kernel.bpf_stats_enabled
	sysctl -qw kernel.bpf_stats_enabled=1
	run_fio profile "$work/profile.$name.json" "$@"
	sysctl -qw kernel.bpf_stats_enabled="${saved_sysctl[kernel.bpf_stats_enabled]}"
	local ios sel
	ios=$(jq '[.jobs[0].read.total_ios, .jobs[0].write.total_ios] | add' "$work/profile.$name.json")
	echo "  $label: $(si "$ios")fio calls; iopath's programs (ids its fds held), by total run time:"
	sel='$ids[0] as $ids | [.[] | select(.id as $id | $ids | index($id)) | select(.run_cnt != null and .run_cnt > 0)]'
	jq -r --slurpfile ids "$work/prog_ids.json" --argjson ios "$ios" "$sel"'
		| sort_by(-.run_time_ns)
		| (["program", "runs", "avg_ns", "total_ms", "ns_per_fio_call"] | @tsv),
		  (.[0:8][] | [.name, .run_cnt, (.run_time_ns / .run_cnt | floor), (.run_time_ns / 1e6 | floor), (.run_time_ns / $ios | floor)] | @tsv),
		  (["all", ([.[].run_cnt] | add), "-", ([.[].run_time_ns] | add / 1e6 | floor), ([.[].run_time_ns] | add / $ios | floor)] | @tsv)
	' "$work/progs.json" | column -t | sed 's/^/    /'
	prof_ns=$(jq -r --slurpfile ids "$work/prog_ids.json" --argjson ios "$ios" "$sel"' | [.[].run_time_ns] | add / $ios | floor' "$work/progs.json")
	prof_hot=$(jq -r --slurpfile ids "$work/prog_ids.json" --argjson ios "$ios" "$sel"' | sort_by(-.run_time_ns) | .[0:2] | map("\(.name) \(.run_time_ns / $ios | floor) ns") | join(", ")' "$work/progs.json")
}
if ! skip profile profile; then
	echo
	echo "== profile: iopath's BPF programs (kernel.bpf_stats_enabled=1, one run each; runs count every process's events:"
	echo "   the raw_syscalls hooks fire on every system call, the block and sched hooks on every request and switch)"
	profile_run worst "1-byte cached reads" "${wfio0[@]}" "${ptimed[@]}"
	row "  profile" "BPF time per 1-byte cached read" "$prof_ns ns" "" "" "top: $prof_hot"
	cold=$work/cold
	fio --name=layout --filename="$cold" --size=1g --rw=write --bs=1m --ioengine=psync --end_fsync=1 \
		--output-format=terse >/dev/null
	dd if="$cold" iflag=nocache count=0 status=none
	profile_run cold "4 KiB cold random reads" --filename="$cold" --size=1g --rw=randread --bs=4k --invalidate=1 "${ptimed[@]}"
	row "  profile" "BPF time per 4 KiB cold read" "$prof_ns ns" "" "" "top: $prof_hot"
fi

# --- 2: typical ----------------------------------------------------------
if ! skip 2 typical; then
	echo
	echo "== 2. typical: 4 KiB cold random reads (reads/s) and 1 MiB sequential buffered writes (MiB/s)"
	big=$work/cold
	[ -e "$big" ] || fio --name=layout --filename="$big" --size=1g --rw=write --bs=1m --ioengine=psync --end_fsync=1 \
		--output-format=terse >/dev/null
	prepare_c() {
		# Evict the file (POSIX_FADV_DONTNEED on all of it); fio's
		# --invalidate=1 does it again when it opens the file.
		dd if="$big" iflag=nocache count=0 status=none
	}
	metric_c() { jq '.jobs[0].read.iops' "$1"; }
	unit=reads/s
	rounds c "base iopath top serve" --filename="$big" --size=1g --rw=randread --bs=4k --invalidate=1 "${timed[@]}"
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
	rounds s "base iopath" --filename="$wfile" --size=1g --rw=write --bs=1m --invalidate=0 "${timed[@]}"
	rm -f "$wfile"
	sync

	b=$(median <<<"${res[c.base]}") t=$(median <<<"${res[c.iopath]}") rr=$(ratio "$t" "$b")
	row "2 typical: 4 KiB cold random reads" "untraced" "$(si "$b")reads/s" "1.000" "" ""
	row "" "iopath trace -p" "$(si "$t")reads/s" "$rr" ">= 0.98" "$(verdict "$rr" ">=" 0.98)"
	t=$(median <<<"${res[c.top]}") rr=$(ratio "$t" "$b")
	row "" "iopath top --json -p (in-kernel aggregates)" "$(si "$t")reads/s" "$rr" ">= 0.97" "$(verdict "$rr" ">=" 0.97)"
	t=$(median <<<"${res[c.serve]}") rr=$(ratio "$t" "$b")
	row "" "iopath serve -p, scraped every 1 s" "$(si "$t")reads/s" "$rr" ">= 0.97" "$(verdict "$rr" ">=" 0.97)"
	b=$(median <<<"${res[s.base]}") t=$(median <<<"${res[s.iopath]}") rr=$(ratio "$t" "$b")
	row "2 typical: 1 MiB sequential buffered rewrites of a cached 1 GiB file" "untraced" "$(printf '%.0f' "$b") MiB/s" "1.000" "" ""
	row "" "iopath trace -p" "$(printf '%.0f' "$t") MiB/s" "$rr" ">= 0.98" "$(verdict "$rr" ">=" 0.98)"
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
	row "4 startup: exec until attached (median of $STARTUP_N)" "iopath trace --ready-file F -p PID" "$mi ms (stop: $ms ms)" "" "<= 150 ms" "$(verdict "$mi" "<=" 150)"
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
