#!/usr/bin/env bash
# scripts/fetch-kernel.sh - download and extract one Debian kernel for scripts/vmtest.sh.
#
# Usage: scripts/fetch-kernel.sh [-c CACHE] SUITE PKG=VERSION
#
# Prints one line on stdout: "PKG=VERSION TREE", the package actually used and the directory
# it was extracted to (TREE/boot/vmlinuz-KVER, TREE/boot/config-KVER, TREE/lib/modules/KVER,
# depmod'ed). KVER is PKG without "linux-image-" (and without "-unsigned").
#
# The package is fetched with `apt-get download` against a private apt state directory
# (CACHE/apt/SUITE: its own source list, lists and archive cache); the machine's apt
# configuration is read, never changed. The private source list reuses the URIs of the
# machine's configured Debian sources (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list
# one-line entries and *.sources deb822 stanzas): the source whose suite is the machine's
# codename (VERSION_CODENAME in /etc/os-release) gives the URI for SUITE, the one with
# CODENAME-security the URI for SUITE-security, so bullseye or sid come from the same mirror
# as the machine's bookworm. VMTEST_DEBIAN_URI / VMTEST_DEBIAN_SECURITY_URI override the
# derived URIs (a host that is not Debian). Release files are verified with Debian's archive
# keyring (/usr/share/keyrings/debian-archive-keyring.gpg, package debian-archive-keyring:
# it holds the bullseye, bookworm and trixie archive keys that sign bullseye and sid).
#
# When PKG=VERSION is no longer in SUITE (sid moves on), the newest package of the same
# series (same major.minor, same flavour) is used instead, and stderr says so.
# Kernels packaged in parts (linux-image-* depending on linux-binary-*, linux-modules-* and
# linux-base-* of the same version, Debian's layout since 7.x, files under usr/lib/modules)
# are fetched with those parts and laid out like the older packages.
#
# Exit status: 0 ready; 2 download/extract failed (one line on stderr says why).
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
msg() { echo "fetch-kernel: $*" >&2; }
die() { echo "fetch-kernel: error: $*" >&2; exit 2; }

SELF=$(realpath "${BASH_SOURCE[0]}")
REPO=$(dirname "$(dirname "$SELF")")
CACHE=${VMTEST_CACHE:-$REPO/.cache/vmtest}
if [ "${1:-}" = -c ]; then [ $# -ge 2 ] || die "-c needs a directory"; CACHE=$2; shift 2; fi
[ $# = 2 ] && [[ $2 == linux-image-*=* ]] || die "usage: fetch-kernel.sh [-c CACHE] SUITE linux-image-PKG=VERSION"
SUITE=$1 PKG=${2%%=*} VER=${2#*=}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
mkdir -p "$CACHE"/{debs,kernels,apt}

tree_of() { echo "$CACHE/kernels/${1}_$2"; }
kver_of() { local k=${1#linux-image-}; echo "${k%-unsigned}"; }

# ---- the machine's Debian sources -> URIs for SUITE ----------------------------------------------
# Prints "URI SUITE" for every enabled "deb" entry of the machine's apt configuration.
machine_sources() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		# deb [opt=val ...] URI SUITE COMPONENT...
		sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && NF >= 3 {print $2, $3}'
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# deb822 stanzas: Types/URIs/Suites/Enabled, blank-line separated; continuation lines
		# (an inline Signed-By key) start with a space and are skipped.
		awk 'function flush() { if (types ~ /(^| )deb( |$)/ && enabled !~ /^[Nn]o/)
				for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print u[i], s[j]
			types = ""; enabled = ""; nu = 0; ns = 0 }
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^[ \t]/ { next }
			{ key = tolower($1); sub(/:$/, "", key); $1 = "" ; sub(/^ +/, "")
			  if (key == "types") types = $0
			  else if (key == "enabled") enabled = $0
			  else if (key == "uris") nu = split($0, u, " ")
			  else if (key == "suites") ns = split($0, s, " ") }
			END { flush() }' "$f"
	done
}

suite_uris() { # SUITE -> the URIs to use for it, one per line
	local want=$1 kind= code
	case $want in *-security) kind=-security ;; *-updates) kind=-updates ;; esac
	if [ "$kind" = -security ] && [ -n "${VMTEST_DEBIAN_SECURITY_URI:-}" ]; then echo "$VMTEST_DEBIAN_SECURITY_URI"; return; fi
	if [ "$kind" != -security ] && [ -n "${VMTEST_DEBIAN_URI:-}" ]; then echo "$VMTEST_DEBIAN_URI"; return; fi
	code=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$code" ] || die "cannot derive a Debian mirror for $want: no VERSION_CODENAME in /etc/os-release (set VMTEST_DEBIAN_URI${kind:+ / VMTEST_DEBIAN_SECURITY_URI})"
	machine_sources | awk -v s="$code$kind" '$2 == s {print $1}' | awk '!seen[$0]++'
}

APT_DIR=$CACHE/apt/$SUITE
apt_opts() {
	APT=(-o "Dir::Etc::sourcelist=$APT_DIR/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache"
		-o Dir::State::status=/dev/null -o APT::Sandbox::User=root -o Acquire::Languages=none
		-o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
		-o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false
		-o Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false)
}

apt_update() {
	local uris u opt=
	uris=$(suite_uris "$SUITE")
	[ -n "$uris" ] || die "no Debian source configured in /etc/apt to derive $SUITE from (want one whose suite is this machine's codename, with the same -security/-updates suffix as $SUITE; or set VMTEST_DEBIAN_URI)"
	[ -f "$KEYRING" ] || die "$KEYRING missing: apt-get install debian-archive-keyring (it signs $SUITE)"
	opt="[signed-by=$KEYRING]"
	mkdir -p "$APT_DIR"/lists/partial "$APT_DIR"/cache/archives/partial
	for u in $uris; do echo "deb $opt $u $SUITE main"; done > "$APT_DIR/sources.list"
	msg "apt-get update for $SUITE (private state in $APT_DIR)"
	apt_opts
	local out
	out=$(apt-get "${APT[@]}" -q update 2>&1) || die "apt-get update for $SUITE failed: $(tail -n1 <<<"$out")"
	if grep -qE '^(W|E):' <<<"$out"; then die "apt-get update for $SUITE: $(grep -m1 -E '^(W|E):' <<<"$out")"; fi
	touch "$APT_DIR/.updated"
}

apt_has() { apt-cache "${APT[@]}" show "$1=$2" >/dev/null 2>&1; }

# newest PKG of the series of PKG (same major.minor and flavour) in the private lists
newest_of_series() {
	local pkg=$1 kver series flavour best= bestv= p v
	kver=$(kver_of "$pkg"); series=$(grep -oE '^[0-9]+\.[0-9]+' <<<"$kver") || return 1
	flavour=${kver##*-}   # amd64
	while read -r p; do
		[[ $p =~ ^linux-image-${series//./\\.}[.-][0-9][^-]*(-[0-9]+)?(\+[a-z0-9]+)?-$flavour$ ]] || continue
		v=$(apt-cache "${APT[@]}" show "$p" 2>/dev/null | sed -n 's/^Version: //p' | head -n1)
		[[ $v == "$series".* ]] || continue
		if [ -z "$bestv" ] || dpkg --compare-versions "$v" gt "$bestv"; then best=$p bestv=$v; fi
	done < <(apt-cache "${APT[@]}" pkgnames "linux-image-$series" 2>/dev/null)
	[ -n "$best" ] && echo "$best=$bestv"
}

deb_for() { # PKG VERSION -> path of a cached .deb with exactly that package and version
	local f
	for f in "$CACHE"/debs/"$1"_*.deb; do
		[ -f "$f" ] || continue
		[ "$(dpkg-deb -f "$f" Package)" = "$1" ] && [ "$(dpkg-deb -f "$f" Version)" = "$2" ] && { echo "$f"; return 0; }
	done
	return 1
}

download() { # PKG VERSION -> cached deb path
	local out
	deb_for "$1" "$2" && return 0
	msg "downloading $1=$2 ($SUITE)"
	out=$(cd "$CACHE/debs" && apt-get "${APT[@]}" -q download "$1=$2" 2>&1) ||
		{ msg "apt-get download $1=$2: $(tail -n1 <<<"$out")"; return 1; }
	deb_for "$1" "$2"
}

# parts of a split kernel package: its Depends of the same version named *-KVER
parts_of() { # DEB KVER VERSION
	dpkg-deb -f "$1" Depends | tr ',' '\n' | awk -v k="-$2" -v v="$3)" \
		'$2 == "(=" && $3 == v && substr($1, length($1) - length(k) + 1) == k {print $1}'
}

extract() { # PKG VERSION DEB... -> TREE
	local pkg=$1 ver=$2 kver tree d; shift 2
	kver=$(kver_of "$pkg"); tree=$(tree_of "$pkg" "$ver")
	rm -rf "$tree.tmp"; mkdir -p "$tree.tmp"
	for d in "$@"; do msg "extracting $(basename "$d")"; dpkg-deb -x "$d" "$tree.tmp"; done
	# split layout (usr/lib/modules/KVER/{vmlinuz,config}): give it the classic paths
	if [ ! -d "$tree.tmp/lib/modules/$kver" ] && [ -d "$tree.tmp/usr/lib/modules/$kver" ]; then
		[ -e "$tree.tmp/lib" ] || ln -s usr/lib "$tree.tmp/lib"
		mkdir -p "$tree.tmp/boot"
		[ -f "$tree.tmp/usr/lib/modules/$kver/vmlinuz" ] && ln -sf "../usr/lib/modules/$kver/vmlinuz" "$tree.tmp/boot/vmlinuz-$kver"
		[ -f "$tree.tmp/usr/lib/modules/$kver/config" ] && ln -sf "../usr/lib/modules/$kver/config" "$tree.tmp/boot/config-$kver"
	fi
	[ -f "$tree.tmp/boot/vmlinuz-$kver" ] || die "$pkg=$ver has no boot/vmlinuz-$kver (nor usr/lib/modules/$kver/vmlinuz)"
	[ -d "$tree.tmp/lib/modules/$kver" ] || die "$pkg=$ver has no lib/modules/$kver"
	depmod -b "$tree.tmp" "$kver"
	rm -rf "$tree"; mv "$tree.tmp" "$tree"; touch "$tree/.vmtest-ok"
	echo "$tree"
}

# ---- main -----------------------------------------------------------------------------------------
tree=$(tree_of "$PKG" "$VER")
if [ -f "$tree/.vmtest-ok" ]; then echo "$PKG=$VER $tree"; exit 0; fi
apt_opts
debs=()
if deb=$(deb_for "$PKG" "$VER"); then debs=("$deb")
elif deb=$(deb_for "$PKG-unsigned" "$VER"); then debs=("$deb") PKG=$PKG-unsigned
else
	# lists older than a day are refreshed before concluding a package is gone
	if [ ! -f "$APT_DIR/.updated" ] || [ -n "$(find "$APT_DIR/.updated" -mmin +1440)" ] || ! apt_has "$PKG" "$VER"; then apt_update; fi
	if ! apt_has "$PKG" "$VER"; then
		if apt_has "$PKG-unsigned" "$VER"; then PKG=$PKG-unsigned
		else
			nv=$(newest_of_series "$PKG") || die "$PKG=$VER is not in $SUITE, and no other kernel of its series is (list: apt-cache pkgnames linux-image- with the private state in $APT_DIR)"
			msg "$PKG=$VER is gone from $SUITE; using the newest of its series: $nv"
			PKG=${nv%%=*} VER=${nv#*=}
			tree=$(tree_of "$PKG" "$VER")
			if [ -f "$tree/.vmtest-ok" ]; then echo "$PKG=$VER $tree"; exit 0; fi
		fi
	fi
	deb=$(download "$PKG" "$VER") || { apt_update; deb=$(download "$PKG" "$VER"); } ||
		die "cannot download $PKG=$VER from $SUITE"
	debs=("$deb")
fi
kver=$(kver_of "$PKG")
if ! dpkg-deb -c "${debs[0]}" | awk -v re="/vmlinuz(-$kver)?$" '$NF ~ re {f = 1} END {exit !f}'; then
	for part in $(parts_of "${debs[0]}" "$kver" "$VER"); do
		d=$(download "$part" "$VER") || { apt_update; d=$(download "$part" "$VER"); } ||
			die "cannot download $part=$VER (a part of $PKG) from $SUITE"
		debs+=("$d")
	done
fi
tree=$(extract "$PKG" "$VER" "${debs[@]}")
echo "$PKG=$VER $tree"
