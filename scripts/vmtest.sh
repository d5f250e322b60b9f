#!/usr/bin/env bash
# scripts/vmtest.sh - run test programs as root inside Debian distro kernels under qemu.
#
# Usage:
#   scripts/vmtest.sh [OPTION]... -- [-C DIR] PROG [ARG]... [--- [-C DIR] PROG [ARG]...]...
#   scripts/vmtest.sh [-k SERIES]... --prepare
#
# For each kernel (default: 5.10, 6.1, 6.12 and 7.2; -j N boots N at once) this boots Debian's
# generic linux-image package under qemu (TCG, 2 vCPUs, 2 GiB) with a busybox initramfs, attaches
# a fresh ext4 disk (/dev/vda, mounted at /mnt/disk) and a small unmounted ext4 disk (/dev/vdb,
# for stacked-device tests; loop and dm_mod are loaded), and runs every PROG, in order, in one boot.
# Kernels are fetched by scripts/fetch-kernel.sh (private apt state, the machine's Debian mirror).
# PROG is a host file (copied in; must be static: CGO_ENABLED=0 go test -c) or a busybox applet.
#
# Options:
#   -k, --kernel SPEC   5.10 | 6.1 | 6.12 | 7.2 | [SUITE:]PKG=VERSION (an exact Debian linux-image
#                       package; SUITE defaults to that of the pin of its series). Repeatable.
#                       Default: all four (pins below; override with VMTEST_KERNEL_5_10 etc.,
#                       value SUITE:PKG=VERSION).
#   -t, --timeout SECS  wall-clock limit per kernel, boot + all programs (default 600).
#                       Programs still running at SECS-20 get SIGQUIT (Go dumps goroutines).
#   -m, --mem MIB       guest memory (default 2048)        --smp N   vCPUs (default 2)
#   -j, --jobs N        boot N kernels at once (default $VMTEST_JOBS, else 1); each kernel's
#                       output is printed whole when it ends. Under TCG a vCPU is a host thread:
#                       more jobs than host cores only slows each one down.
#       --disk-size MIB size of the fresh ext4 test disk (default 512)
#   -e, --env NAME=VAL  extra environment for the programs. Repeatable.
#   -v, --verbose       stream the programs' output while they run (instead of after each boot)
#       --keep          keep the work directory (disk image, console logs) and print its path
#       --prepare       only download/extract the kernels and build the initramfs (cache warm-up)
#   -h, --help
#
# In the guest each PROG runs as root with cwd = DIR (-C, relative to the caller's cwd) or else
# the caller's cwd; the repository is mounted read-only at its host path, so that works for
# `go test -exec`, which runs us in the package directory:
#   CGO_ENABLED=0 go test -p 1 -exec "$PWD/scripts/vmtest.sh --" ./tracer/
# (a cwd outside the repository becomes /tmp in the guest). scripts/vmtest-go.sh builds the test
# binaries of several packages and runs them all in one boot per kernel.
# Environment given to the programs:
#   TMPDIR=/mnt/disk/tmp (/var/tmp links there)  IOPATH_TESTDISK=/mnt/disk  IOPATH_VM_KERNEL=$(uname -r)  IOPATH_VM=1
#   IOPATH_STACKDISK=/dev/vdb
# Mounted: proc, sysfs, devtmpfs, tmpfs /tmp, tracefs /sys/kernel/tracing, debugfs, bpffs
# /sys/fs/bpf, cgroup2 /sys/fs/cgroup. vm.dirty_* sysctls are set to the kernel defaults.
#
# Output: the programs' stdout+stderr go to stdout (per kernel, with === header lines); one
# verdict line per kernel and a summary go to stderr: per kernel its boot time, wall time, qemu's
# CPU time and the guest's idle time (waits: sleeps, RCU grace periods, timers; TCG uses no host
# CPU then), and the total. On a loaded host the wall time grows but CPU + idle stays about what
# the kernel takes on an idle core of its own.
# Exit status: 0 all passed; 1 a program failed (non-zero exit or timed out) on some kernel;
#              3 a kernel failed to boot / the guest died / qemu hit the time limit; 2 usage
#              or host setup error (missing tool, package not downloadable).
#
# Cache: $VMTEST_CACHE (default REPO/.cache/vmtest): debs/, kernels/PKG_VERSION/ (extracted,
# depmod'ed), initramfs/KVER-HASH.cpio.gz. Remove it to start over.
# Other env: VMTEST_ACCEL (default tcg; nested KVM hangs here), VMTEST_CPU (TCG's -cpu model,
# default max), VMTEST_QEMU, VMTEST_APPEND
# (extra kernel command line), VMTEST_MODULES (module names to load, deps resolved),
# VMTEST_PVH (auto: boot xz-packed kernels from their vmlinux via PVH, 0 never, 1 also zstd).
set -euo pipefail

# ---- pinned kernels (Debian, amd64 generic flavour): SUITE:PKG=VERSION --------------------------
# 5.10: Debian 11 bullseye; 6.1 and 6.12: Debian 12 bookworm-security; 7.2: sid. sid moves on: when
# its pin is gone, scripts/fetch-kernel.sh takes the newest 7.2 and says so on stderr.
: "${VMTEST_KERNEL_5_10:=bullseye:linux-image-5.10.0-32-amd64=5.10.223-1}"
: "${VMTEST_KERNEL_6_1:=bookworm-security:linux-image-6.1.0-57-amd64=6.1.192-3}"
: "${VMTEST_KERNEL_6_12:=bookworm-security:linux-image-6.12.117+deb12-amd64=6.12.117-1~deb12u1}"
: "${VMTEST_KERNEL_7_2:=sid:linux-image-7.2.13+deb14-amd64=7.2.13-1}"
VMTEST_SERIES="5.10 6.1 6.12 7.2"
: "${VMTEST_MODULES:=virtio_pci virtio_blk crc32c_generic|crc32c-cryptoapi ext4 9pnet_virtio 9p loop dm_mod}"

export PATH="$PATH:/usr/sbin:/sbin"
SELF=$(realpath "${BASH_SOURCE[0]}")
REPO=$(dirname "$(dirname "$SELF")")
CACHE=${VMTEST_CACHE:-$REPO/.cache/vmtest}
QEMU=${VMTEST_QEMU:-qemu-system-x86_64}
ACCEL=${VMTEST_ACCEL:-tcg}

msg() { echo "vmtest: $*" >&2; }
die() { echo "vmtest: error: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$SELF"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }
# shell-quote for the guest's busybox ash (plain single quotes only)
q() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }

# ---- arguments --------------------------------------------------------------------------------
KSPECS=() ENVS=() TIMEOUT=${VMTEST_TIMEOUT:-600} MEM=2048 SMP=2 DISK_MB=512 JOBS=${VMTEST_JOBS:-1}
VERBOSE=0 KEEP=0 PREPARE=0
while [ $# -gt 0 ]; do
	case $1 in
	-k|--kernel) [ $# -ge 2 ] || die "$1 needs a value"; KSPECS+=("$2"); shift 2 ;;
	-t|--timeout) [[ ${2:-} =~ ^[0-9]+$ ]] || die "$1 needs seconds"; TIMEOUT=$2; shift 2 ;;
	-m|--mem) [[ ${2:-} =~ ^[0-9]+$ ]] || die "$1 needs MiB"; MEM=$2; shift 2 ;;
	--smp) [[ ${2:-} =~ ^[0-9]+$ ]] || die "$1 needs a count"; SMP=$2; shift 2 ;;
	-j|--jobs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 needs a count ≥ 1"; JOBS=$2; shift 2 ;;
	--disk-size) [[ ${2:-} =~ ^[0-9]+$ ]] || die "$1 needs MiB"; DISK_MB=$2; shift 2 ;;
	-e|--env) [[ ${2:-} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "$1 needs NAME=VALUE"; ENVS+=("$2"); shift 2 ;;
	-v|--verbose) VERBOSE=1; shift ;;
	--keep) KEEP=1; shift ;;
	--prepare) PREPARE=1; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	*) die "unknown option '$1' (programs go after --; see --help)" ;;
	esac
done
[ ${#KSPECS[@]} -gt 0 ] || read -ra KSPECS <<<"$VMTEST_SERIES"
[ "$TIMEOUT" -ge 30 ] || die "--timeout must be at least 30 s"
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "VMTEST_JOBS=$JOBS: want a count ≥ 1"
[ $PREPARE = 1 ] || [ $# -gt 0 ] || die "no program given (usage: vmtest.sh [OPTION]... -- PROG [ARG]...; see --help)"

# Split "[-C DIR] PROG ARGS... --- [-C DIR] PROG ARGS..." into runs.
RUN_DIRS=()   # run i: cwd RUN_DIRS[i-1], argv in array RUN_Wi
in_repo() { [ "$1" = "$REPO" ] || [[ $1 == "$REPO"/* ]]; }
if in_repo "$PWD"; then default_dir=$PWD; else default_dir=/tmp; fi
while [ $# -gt 0 ]; do
	dir=$default_dir words=()
	if [ "$1" = -C ]; then
		[ $# -ge 3 ] || die "-C needs a directory and a program"
		dir=$(realpath -e "$2" 2>/dev/null) || die "-C $2: no such directory"
		in_repo "$dir" || die "-C $2: must be inside $REPO (only the repository is shared)"
		shift 2
	fi
	[ $# -gt 0 ] && [ "$1" != --- ] || die "empty program after ---"
	while [ $# -gt 0 ] && [ "$1" != --- ]; do words+=("$1"); shift; done
	[ $# -gt 0 ] && shift   # the ---
	RUN_DIRS+=("$dir")
	eval "RUN_W${#RUN_DIRS[@]}=(\"\${words[@]}\")"
done

# ---- host tools ---------------------------------------------------------------------------------
for t in "$QEMU" busybox cpio gzip xz depmod modprobe mkfs.ext4 dpkg-deb apt-get apt-cache timeout flock sha256sum; do
	command -v "$t" >/dev/null || die "missing '$t' (apt-get install qemu-system-x86 busybox-static cpio kmod xz-utils e2fsprogs)"
done
BUSYBOX=$(command -v busybox)
dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
	die "busybox must be the static build (apt-get install busybox-static)"

# ---- work dir, cleanup -----------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vmtest.XXXXXX")
cleanup() {
	local rc=$? f
	for f in "$WORK"/k*/qpid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
	[ -n "$(jobs -p)" ] && kill $(jobs -p) 2>/dev/null && wait 2>/dev/null
	if [ $KEEP = 1 ]; then msg "kept work directory $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap cleanup EXIT
trap 'msg "interrupted"; exit 130' INT TERM HUP
mkdir -p "$CACHE"/{debs,kernels,initramfs}

# ---- kernels: download, extract, initramfs -------------------------------------------------------
resolve_spec() { # SPEC -> "SUITE:PKG=VERSION"
	local s v
	case $1 in
	*:linux-image-*=*) echo "$1" ;;
	linux-image-*=*) # the suite of the pinned kernel of the same series
		s=$(grep -oE '^[0-9]+\.[0-9]+' <<<"${1#linux-image-}") || true
		v=VMTEST_KERNEL_${s//./_}
		[ -n "$s" ] && [ -n "${!v:-}" ] || die "--kernel $1: give the Debian suite too: SUITE:$1"
		echo "${!v%%:*}:$1" ;;
	*) v=VMTEST_KERNEL_${1//./_}
		[[ $1 =~ ^[0-9]+\.[0-9]+$ ]] && [ -n "${!v:-}" ] || die "--kernel $1: want one of $VMTEST_SERIES or [SUITE:]linux-image-PKG=VERSION"
		echo "${!v}" ;;
	esac
}

fetch_kernel() { # SUITE:PKG=VERSION -> sets KTREE KVER KPV (the package used, PKG=VERSION)
	local out
	out=$("$REPO/scripts/fetch-kernel.sh" -c "$CACHE" "${1%%:*}" "${1#*:}") || exit 2
	KPV=${out%% *} KTREE=${out#* }
	KVER=${KPV%%=*}; KVER=${KVER#linux-image-}; KVER=${KVER%-unsigned}
}

write_init() { cat <<'INIT'
#!/bin/sh
# vmtest guest init (generated by scripts/vmtest.sh)
export PATH=/bin
/bin/busybox --install -s /bin
V=/host
say() { echo "vmtest-init: $*"; }
fatal() { say "FATAL: $*"; [ -d $V/res ] && echo "$*" > $V/res/fatal; sync; poweroff -f; sleep 30; }
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
for m in /lib/vmtest/*.ko; do insmod "$m" || fatal "insmod $m failed"; done
mount -t tracefs tracefs /sys/kernel/tracing || say "tracefs mount failed"
mount -t debugfs debugfs /sys/kernel/debug || say "debugfs mount failed"
mount -t bpf bpf /sys/fs/bpf || say "bpffs mount failed"
mount -t cgroup2 cgroup2 /sys/fs/cgroup || say "cgroup2 mount failed"
mkdir -p $V && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 vmtest $V || fatal "9p mount of the share failed"
[ -f $V/guest.env ] || fatal "no guest.env in the share"
. $V/guest.env
mkdir -p "$VMTEST_REPO" && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro vmrepo "$VMTEST_REPO" ||
	fatal "9p mount of the repository failed"
i=0; while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i+1)); done
mkdir -p /mnt/disk && mount -t ext4 /dev/vda /mnt/disk || fatal "cannot mount /dev/vda (ext4) at /mnt/disk"
mkdir -p /mnt/disk/tmp && chmod 1777 /mnt/disk/tmp
# /var/tmp on the disk too, as on a Debian system (tests put page-cache files there)
mkdir -p /var && ln -s /mnt/disk/tmp /var/tmp
# vm.dirty_* defaults (what a stock kernel and the CI host use)
echo 3000 > /proc/sys/vm/dirty_expire_centisecs
echo 500 > /proc/sys/vm/dirty_writeback_centisecs
echo 10 > /proc/sys/vm/dirty_background_ratio
echo 20 > /proc/sys/vm/dirty_ratio
ulimit -l unlimited
export HOME=/root TMPDIR=/mnt/disk/tmp IOPATH_TESTDISK=/mnt/disk IOPATH_VM=1 IOPATH_VM_KERNEL="$(uname -r)"
[ -b /dev/vdb ] && export IOPATH_STACKDISK=/dev/vdb
mkdir -p $HOME
echo "$(cut -d' ' -f1 /proc/uptime) $IOPATH_VM_KERNEL" > $V/res/booted
say "up: $IOPATH_VM_KERNEL, $(nproc) cpus, vda $(cat /sys/block/vda/queue/scheduler) ra=$(cat /sys/block/vda/queue/read_ahead_kb)KiB"
RC=0
vmtest_run() { # INDEX DIR PROG [ARG]...
	n=$1 d=$2 p=$3; shift 3
	up=$(cut -d. -f1 /proc/uptime); left=$((VMTEST_DEADLINE - up)); [ $left -gt 5 ] || left=5
	say "run $n: $p $* (cwd $d, limit ${left}s)"
	echo "=== vmtest [$IOPATH_VM_KERNEL] run $n: $p $*" >> $V/res/out.log
	# Run the test binary from the guest's RAM (tmpfs), not from the 9p share: a
	# page fault on a 9p file's text is read through netfs and counted in the
	# faulting thread's read_bytes with no bio (TestCold on 6.1 saw 16 KiB of
	# "storage reads" in a warm run that read nothing from its disk).
	case $p in /host/bin/*) cp "$p" /tmp/ || fatal "cannot copy $p to /tmp"; p=/tmp/${p##*/} ;; esac
	cd "$d" 2>/dev/null || cd /tmp
	"$p" "$@" >> $V/res/out.log 2>&1 &
	pid=$!
	( sleep $left; : > $V/res/timeout.$n
	  echo "=== vmtest: run $n still running after ${left}s: SIGQUIT, then SIGKILL in 10s" >> $V/res/out.log
	  kill -QUIT $pid; sleep 10; kill -KILL $pid ) 2>/dev/null &
	wd=$!
	wait $pid; rc=$?
	kill $wd 2>/dev/null; wait $wd 2>/dev/null
	cd /
	case $p in /tmp/*) rm -f "$p" ;; esac
	st=exit; [ -f $V/res/timeout.$n ] && st=timeout
	echo "$n $rc $st" >> $V/res/results
	if [ $st = timeout ]; then st2=" (killed: time limit)"; else st2=; fi
	echo "=== vmtest [$IOPATH_VM_KERNEL] run $n: exit status $rc$st2" >> $V/res/out.log
	[ $rc -eq 0 ] || [ $RC -ne 0 ] || RC=$rc
	[ $st = exit ] || RC=124
}
. $V/run.sh
head -n1 /proc/stat > $V/res/stat   # the guest's idle time: TCG burns no host CPU then
dmesg > $V/res/dmesg.log
sync
umount /mnt/disk || say "umount /mnt/disk failed"
echo $RC > $V/res/rc
say "done, rc=$RC"
poweroff -f
INIT
}

# Under TCG the in-guest XZ decompressor of Debian's 6.1 bzImage costs ~4 s per boot. Such
# kernels are booted instead from their uncompressed vmlinux through the PVH entry point (qemu
# loads an ELF kernel with a PVH note directly; CONFIG_PVH=y in Debian's configs). zstd-packed
# bzImages (6.12) decompress fast and boot as they are. VMTEST_PVH=0 disables this, =1 forces it.
kernel_image() { # KTREE KVER -> sets KIMAGE
	local ktree=$1 kver=$2 bz=$1/boot/vmlinuz-$2 off fmt
	KIMAGE=$bz
	[ "${VMTEST_PVH:-auto}" != 0 ] || return 0
	[ -f "$ktree/vmlinux-pvh" ] && { KIMAGE=$ktree/vmlinux-pvh; return 0; }
	grep -q '^CONFIG_PVH=y' "$ktree/boot/config-$kver" 2>/dev/null || return 0
	for fmt in xz zstd; do
		[ "$fmt" = xz ] || [ "${VMTEST_PVH:-auto}" = 1 ] || continue
		case $fmt in xz) sig='\xfd7zXZ\x00' ;; zstd) sig='\x28\xb5\x2f\xfd' ;; esac
		off=$(LC_ALL=C grep -obUaP -m1 "$sig" "$bz" | head -n1 | cut -d: -f1) || true
		[ -n "$off" ] || continue
		tail -c +$((off + 1)) "$bz" | { if [ $fmt = xz ]; then xz -dcq --single-stream; else zstd -dcq; fi; } \
			> "$ktree/vmlinux-pvh.tmp" 2>/dev/null || true
		if [ "$(head -c4 "$ktree/vmlinux-pvh.tmp" | od -An -c | tr -d ' ')" = '177ELF' ]; then
			mv "$ktree/vmlinux-pvh.tmp" "$ktree/vmlinux-pvh"; KIMAGE=$ktree/vmlinux-pvh; return 0
		fi
	done
	rm -f "$ktree/vmlinux-pvh.tmp"
}

build_initramfs() { # KTREE KVER -> sets INITRD
	local ktree=$1 kver=$2 mods=() m line key i ir b
	for alts in $VMTEST_MODULES; do
		# A|B: the first of these modules the kernel has (7.x renamed crc32c_generic)
		for m in ${alts//|/ }; do
			out=$(modprobe -d "$ktree" -S "$kver" --show-depends "$m" 2>&1) && break
		done || die "$kver: module ${alts//|/ or }: $out"
		while read -r line; do
			case $line in insmod\ *) line=${line#insmod }; line=${line%% *}
				[[ " ${mods[*]} " == *" $line "* ]] || mods+=("$line") ;; esac
		done <<<"$out"
	done
	key=$( { write_init; printf '%s\n' "${mods[@]##*/}"; sha256sum < "$BUSYBOX"; } | sha256sum | cut -c1-12)
	INITRD=$CACHE/initramfs/$kver-$key.cpio.gz
	[ -f "$INITRD" ] && { touch "$INITRD"; return 0; }  # mtime = last use (stale-build cleanup)
	msg "building initramfs for $kver (${#mods[@]} modules)"
	ir=$WORK/ir-$kver; rm -rf "$ir"
	mkdir -p "$ir"/{bin,dev,proc,sys,tmp,host,root,lib/vmtest}
	cp "$BUSYBOX" "$ir/bin/busybox"; ln -s busybox "$ir/bin/sh"
	write_init > "$ir/init"; chmod 755 "$ir/init"
	i=0
	for m in "${mods[@]}"; do
		i=$((i+1)); b=$(printf %02d-%s "$i" "${m##*/}")
		case $m in
		*.ko.xz) xz -dc "$m" > "$ir/lib/vmtest/${b%.xz}" ;;
		*.ko.zst) zstd -qdc "$m" > "$ir/lib/vmtest/${b%.zst}" ;;
		*.ko.gz) gzip -dc "$m" > "$ir/lib/vmtest/${b%.gz}" ;;
		*) cp "$m" "$ir/lib/vmtest/$b" ;;
		esac
	done
	(cd "$ir" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) > "$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"; rm -rf "$ir"
	# stale builds: other keys of this kernel not used for a day (a concurrent run from another
	# checkout may be about to boot one)
	find "$CACHE/initramfs" -name "$kver-*.cpio.gz" ! -path "$INITRD" -mtime +0 -delete 2>/dev/null || true
}

# prefetch: from an empty cache (a CI run) the downloads dominate the set-up (122 s for four
# kernels one after the other). Kernels of different suites are fetched at once, each suite's
# kernels in turn (one private apt state per suite: two apt-gets on one would fight over its
# lock). The loop below then finds them extracted and reports any failure itself.
prefetch() {
	local -A suites=()
	local spec pv s p
	for spec in "${KSPECS[@]}"; do
		pv=$(resolve_spec "$spec") || return 0
		[ -f "$CACHE/kernels/$(sed 's/=/_/' <<<"${pv#*:}")/.vmtest-ok" ] && continue
		suites[${pv%%:*}]+=" ${pv#*:}"
	done
	[ ${#suites[@]} -gt 1 ] || return 0
	msg "fetching the kernels of ${!suites[*]} at once"
	for s in "${!suites[@]}"; do
		( for p in ${suites[$s]}; do "$REPO/scripts/fetch-kernel.sh" -c "$CACHE" "$s" "$p" >/dev/null || true; done ) &
	done
	wait
}

KPKGS=() KVERS=() KIMAGES=() KINITRDS=()
exec 9>"$CACHE/.lock"
flock 9
prefetch
for spec in "${KSPECS[@]}"; do
	pv=$(resolve_spec "$spec") || exit 2
	fetch_kernel "$pv"
	kernel_image "$KTREE" "$KVER"
	build_initramfs "$KTREE" "$KVER"
	KPKGS+=("$KPV") KVERS+=("$KVER") KIMAGES+=("$KIMAGE") KINITRDS+=("$INITRD")
done
flock -u 9
if [ $PREPARE = 1 ]; then
	for i in "${!KVERS[@]}"; do msg "ready: ${KPKGS[$i]} -> ${KINITRDS[$i]}"; done
	exit 0
fi

# ---- the share: programs + run list ---------------------------------------------------------------
SHARE=$WORK/share; mkdir -p "$SHARE/bin"
is_dynamic_elf() { # true if $1 is an ELF with a PT_INTERP program header
	local f=$1 phoff phentsize phnum k
	[ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || return 1
	phoff=$(od -An -t u8 -j 32 -N 8 "$f" | tr -d ' ')
	phentsize=$(od -An -t u2 -j 54 -N 2 "$f" | tr -d ' ')
	phnum=$(od -An -t u2 -j 56 -N 2 "$f" | tr -d ' ')
	for ((k = 0; k < phnum; k++)); do
		[ "$(od -An -t u4 -j $((phoff + k * phentsize)) -N 4 "$f" | tr -d ' ')" = 3 ] && return 0
	done
	return 1
}
{
	for i in "${!RUN_DIRS[@]}"; do
		eval 'w=("${RUN_W'$((i + 1))'[@]}")'
		prog=${w[0]}
		if [[ $prog == */* ]]; then
			[ -f "$prog" ] || die "program $prog: no such file"
			is_dynamic_elf "$prog" && die "program $prog is dynamically linked; build it with CGO_ENABLED=0"
			b=$(printf %02d-%s $((i + 1)) "${prog##*/}")
			cp "$prog" "$SHARE/bin/$b"; chmod +x "$SHARE/bin/$b"
			w[0]=/host/bin/$b
		fi
		line="vmtest_run $((i + 1)) $(q "${RUN_DIRS[$i]}")"
		for a in "${w[@]}"; do line+=" $(q "$a")"; done
		echo "$line"
	done
} > "$SHARE/run.sh"

DEADLINE=$((TIMEOUT - 20))
{
	echo "VMTEST_REPO=$(q "$REPO")"
	echo "VMTEST_DEADLINE=$DEADLINE"
	for e in "${ENVS[@]}"; do echo "export ${e%%=*}=$(q "${e#*=}")"; done
} > "$SHARE/guest.env"

# ---- boot each kernel ---------------------------------------------------------------------------------
# child_cpu BEFORE AFTER: user+system seconds of the children waited for between two outputs of
# the `times` builtin (its second line: children's user and system time, as 1m2.345s). Under TCG
# this is qemu's CPU time: on a loaded host it stays what the boot costs while the wall time grows.
child_cpu() {
	awk 'function s(x, m) { m = x; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", x); sub(/s$/, "", x); return m * 60 + x }
		FNR == 2 { t[FILENAME == ARGV[1]] = s($1) + s($2) }
		END { printf "%.1f", t[0] - t[1] }' "$1" "$2"
}

# boot_one I: boots kernel I with its own share, disks and logs under $WORK, runs the programs and
# leaves in $WORK/k$I/: out (the programs' output block), msgs (verdict, console tail, warnings
# for stderr), line (the summary line) and code (0 pass, 1 program failed, 3 boot/guest error).
boot_one() {
	local i=$1 kver=${KVERS[$1]} d=$WORK/k$1 share disk stack console accel boot_how t0 qrc wall res boot
	local verdict code why panic line last tpid= cpu idle
	rm -rf "$d"; mkdir -p "$d"
	share=$d/share; mkdir -p "$share/res"; : > "$share/res/out.log"
	cp -al "$SHARE/bin" "$share/bin"; cp "$SHARE/run.sh" "$SHARE/guest.env" "$share/"
	disk=$d/disk.img console=$WORK/console-$kver.log
	truncate -s "${DISK_MB}M" "$disk"
	mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$disk"
	# /dev/vdb: a small journaled ext4 for stacked-device tests (dm-linear over it)
	stack=$d/stack.img; truncate -s 64M "$stack"
	mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$stack"
	accel=(-accel tcg -cpu "${VMTEST_CPU:-max}"); [ "$ACCEL" = kvm ] && accel=(-accel kvm -cpu host)
	boot_how=bzImage; [[ ${KIMAGES[$i]} == */vmlinux-pvh ]] && boot_how="vmlinux via PVH"
	msg "booting ${KPKGS[$i]} ($boot_how, $ACCEL, ${SMP} vCPUs, ${MEM} MiB, limit ${TIMEOUT}s)"
	t0=$(now)
	times > "$d/times0"   # this shell's children's CPU so far (a builtin: no subshell)
	# no_timer_check: under TCG on a loaded host the guest's IO-APIC timer
	# check can fail (5.10 panicked "IO-APIC + timer doesn't work!" at load 8);
	# it only checks the timer, it enables nothing.
	timeout -k 5 "$TIMEOUT" "$QEMU" -nodefaults -no-user-config -no-reboot -display none \
		"${accel[@]}" -smp "$SMP" -m "$MEM" -serial "file:$console" \
		-kernel "${KIMAGES[$i]}" -initrd "${KINITRDS[$i]}" \
		-append "console=ttyS0 panic=-1 quiet no_timer_check ${VMTEST_APPEND:-}" \
		-drive "file=$disk,format=raw,if=virtio" -drive "file=$stack,format=raw,if=virtio" \
		-fsdev "local,id=vmtest,path=$share,security_model=none" \
		-device virtio-9p-pci,fsdev=vmtest,mount_tag=vmtest \
		-fsdev "local,id=vmrepo,path=$REPO,security_model=none,readonly=on" \
		-device virtio-9p-pci,fsdev=vmrepo,mount_tag=vmrepo \
		</dev/null >"$d/qemu.out" 2>&1 &
	echo $! > "$d/qpid"
	if [ $VERBOSE = 1 ]; then
		if [ "$JOBS" -gt 1 ]; then tail -n +1 -F "$share/res/out.log" 2>/dev/null | sed -u "s/^/[$kver] /" & tpid=$!
		else tail -n +1 -F "$share/res/out.log" 2>/dev/null & tpid=$!; fi
	fi
	qrc=0; wait "$(cat "$d/qpid")" || qrc=$?
	rm -f "$d/qpid"
	if [ -n "$tpid" ]; then sleep 0.3; kill "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null || true; fi
	wall=$(secs "$t0" "$(now)")
	times > "$d/times1"
	cpu=$(child_cpu "$d/times0" "$d/times1")
	res=$share/res boot=?
	[ -f "$res/booted" ] && boot=$(awk '{printf "%.1f", $1}' "$res/booted")
	: > "$d/out"
	if [ $VERBOSE = 0 ]; then
		{ echo "===== vmtest: output on $kver ====="; cat "$res/out.log"; } > "$d/out"
	fi
	verdict=PASS code=0 why=
	panic=$(grep -m1 -o 'Kernel panic - not syncing:.*' "$console" | tr -d '\r' || true)
	if [ -f "$res/rc" ]; then
		if [ "$(cat "$res/rc")" != 0 ]; then
			verdict=FAIL code=1 why=
			while read -r n rc st; do
				[ "$rc" = 0 ] && [ "$st" = exit ] && continue
				eval 'w=("${RUN_W'"$n"'[@]}")'
				if [ "$st" = timeout ]; then why+="; run $n (${w[0]##*/}) timed out"
				else why+="; run $n (${w[0]##*/}) exit status $rc"; fi
			done < "$res/results"
			why="program failed${why}"
		fi
	elif [ -f "$res/fatal" ]; then
		verdict=ERROR code=3 why="guest init failed: $(cat "$res/fatal") (no rc file)"
	elif [ ! -f "$res/booted" ]; then
		verdict=ERROR code=3
		if [ $qrc = 124 ] || [ $qrc = 137 ]; then why="kernel did not boot within ${TIMEOUT}s (no rc file)"
		elif [ -n "$panic" ]; then why="kernel did not boot: ${panic} (no rc file)"
		else why="kernel did not boot: qemu exited with status $qrc before the guest was up (no rc file)"; fi
	else
		verdict=ERROR code=3
		last=$( (tail -n1 "$res/results" 2>/dev/null || true) | cut -d' ' -f1)
		if [ $qrc = 124 ] || [ $qrc = 137 ]; then why="time limit ${TIMEOUT}s hit while programs ran (no rc file; last finished run: ${last:-none})"
		else why="guest died while programs ran: ${panic:-qemu exited with status $qrc} (no rc file)"; fi
	fi
	idle=?
	# cpu user nice system idle iowait ... in USER_HZ (100 on Debian's kernels)
	[ -f "$res/stat" ] && idle=$(awk '{printf "%.1f", ($5 + $6) / 100}' "$res/stat")
	line="$verdict $kver (boot ${boot}s, wall ${wall}s, qemu CPU ${cpu}s, guest idle ${idle}s)"; [ -n "$why" ] && line+=": $why"
	{
		echo "vmtest: $line"
		if [ $code != 0 ]; then
			echo "vmtest: ---- console tail ($kver) ----"
			tail -n 40 "$console" | sed 's/^/  | /'
			[ -s "$d/qemu.out" ] && sed 's/^/  qemu: /' "$d/qemu.out"
		fi
		if [ -f "$res/dmesg.log" ] && bad=$(grep -E 'BUG:|WARNING:|Oops|general protection|Call Trace' "$res/dmesg.log"); then
			echo "vmtest: warning: kernel complained during the run on $kver:"
			head -n 20 <<<"$bad" | sed 's/^/  | /'
		fi
	} > "$d/msgs"
	echo "$line" > "$d/line"
	[ $KEEP = 1 ] && cp -r "$res" "$WORK/res-$kver"
	rm -f "$disk" "$stack"
	echo $code > "$d/code"
}

# report I: prints what boot_one I left (output on stdout, verdict and diagnostics on stderr).
report() { cat "$WORK/k$1/out"; cat "$WORK/k$1/msgs" >&2; }

# Kernels boot JOBS at a time (-j); each one's output is printed when it ends, whole.
declare -A RUNNING=()   # background pid -> kernel index
T_ALL=$(now)
reap() { # waits for one boot job to end and reports every job that has ended
	local p
	wait -n "${!RUNNING[@]}" 2>/dev/null || true
	for p in "${!RUNNING[@]}"; do
		kill -0 "$p" 2>/dev/null && continue
		wait "$p" 2>/dev/null || true; report "${RUNNING[$p]}"; unset "RUNNING[$p]"
	done
}
for i in "${!KVERS[@]}"; do
	if [ "$JOBS" -le 1 ]; then boot_one "$i"; report "$i"; continue; fi
	while [ ${#RUNNING[@]} -ge "$JOBS" ]; do reap; done
	boot_one "$i" & RUNNING[$!]=$i
done
while [ ${#RUNNING[@]} -gt 0 ]; do reap; done
OVERALL=0
msg "summary: ${#KVERS[@]} kernel(s), $JOBS at a time, $(secs "$T_ALL" "$(now)")s wall in all:"
for i in "${!KVERS[@]}"; do
	d=$WORK/k$i
	if [ -f "$d/code" ]; then code=$(cat "$d/code"); line=$(cat "$d/line")
	else code=3 line="ERROR ${KVERS[$i]}: the boot job ended without a verdict (see above)"; fi
	msg "  $line"
	[ "$code" -gt $OVERALL ] && OVERALL=$code
done
exit $OVERALL
