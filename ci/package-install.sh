#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/package-install.sh [--full|--base] - tb5's debs installed into a fresh Debian
# 12 and booted there:
#
#   1. tb5's signed apt repository (ci/release.sh: apt-ftparchive, InRelease
#      and Release.gpg signed with a release key made for CI, the public key
#      in tb5-archive-keyring, a deb822 tb5.sources) of the debs of
#      ci/package.sh (build-pkg-deb/packages; with --full also the previous
#      release's, built from git history by ci/prev-release.sh), served over
#      HTTP on 127.0.0.1 (python3 -m http.server) beside two tampered copies
#   2. a fresh Debian 12 made by debootstrap with its kernel, its headers,
#      systemd and udev (cached as a tarball in $TB5_KCACHE/pkg-base, made
#      again with TB5_KREFRESH=1), unpacked anew for every run
#   3. in it, as an operator does: tb5-archive-keyring from the repository,
#      tb5.sources in /etc/apt/sources.list.d/, `apt update` (no
#      [trusted=yes]: the signature is checked against the keyring); apt
#      refuses the repository without the key (NO_PUBKEY), with a tampered
#      InRelease/Release (BADSIG) and a tampered deb (Hash Sum mismatch);
#      then `apt install tb5-nccl-minimal` (DKMS builds tb5.ko for that
#      system's kernel); with --full, the previous release (0.1.0,
#      packaging/previous-release) first, its /etc/modprobe.d/tb5.conf
#      edited (ring_size=2048), then the upgrade, which must keep the edit,
#      leave DKMS with the new version only and install the new tb5.ko,
#      then tb5-nccl-server (the exporter's unit, enabled by its postinst)
#   4. the system booted under QEMU (TCG) with its own kernel, initramfs,
#      systemd and udev; ci/vm/install-guest.sh runs there as a systemd
#      service: modprobe tb5 takes ring_size from the conffile, the loaded
#      module is this build's version (/sys/module/tb5/version), the nodes
#      are group tb5 mode 0660, tb5-selftest passes as an unprivileged
#      member of tb5, a short tb5-perf runs; with --full also: the udev
#      rule reaches nodes that existed before it (through the package's
#      postinst), a changed ring_size takes effect after a reload, and
#      tb5-exporter runs under systemd since boot, answers GET /metrics
#      with the loop pair's series, scores OK or better in
#      `systemd-analyze security` and stops cleanly
#   5. with --full, back in the system: `apt purge` leaves no file, no DKMS
#      entry and no group tb5; then Debian's DKMS autopkgtest
#      (/usr/lib/dkms/dkms-autopkgtest) on tb5-dkms
#
# --base only prepares the cached base system.
#
# Work directory: build-pkg-vm/ (the system's root, its disk image, the
# console log console.log). Needs root (re-runs itself through sudo).
#
# Knobs: TB5_KCACHE (/var/cache/tb5-ci), TB5_KREFRESH (1: make the base
# system again), TB5_VM_TIMEOUT (seconds, default 900), TB5_VM_BOOT_TIMEOUT
# (seconds to the guest's start marker, default 300 here),
# TB5_VM_BOOT_RETRIES (2), TB5_VM_CPU, TB5_VM_MEM (MiB, 2048), TB5_VM_SMP (2):
# see ci/vm/boot-lib.sh.
# dpkg-query's formats and the inner shells' arguments are single-quoted.
# shellcheck disable=SC2016
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kernel-lib.sh"
# shellcheck source=ci/vm/boot-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/vm/boot-lib.sh"
# shellcheck source=ci/vm/system-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/vm/system-lib.sh"

FULL=0
BASE_ONLY=0
WORK=$TB5_ROOT/build-pkg-vm
ROOT=$WORK/root
BASE=$TB5_SYS_BASE
BASE_DIR=${BASE%/*}
ARCHIVES=$TB5_KCACHE/pkg-apt-archives
DEBS=$TB5_ROOT/build-pkg-deb/packages
PREV_DEBS=
# The signed repository (ci/release.sh) and what the HTTP server serves:
# www/apt (it), www/bad-release (InRelease and Release altered after
# signing), www/bad-package (one deb altered after indexing).
RELEASE=$WORK/release
WWW=$WORK/www
HTTP_PID=
HTTP_PORT=
SUITE=bookworm
# The packages of the base system: the kernel with its headers (DKMS needs
# them), systemd and udev to boot; tb5-nccl-minimal brings the rest (dkms,
# the compiler) from the mirror.
BASE_PKGS=(linux-image-amd64 linux-headers-amd64 systemd-sysv udev kmod
	initramfs-tools apt-utils)
# tb5's packages that tb5-nccl-minimal pulls in.
MINIMAL_PKGS=(tb5-nccl-minimal tb5-dkms libtb5-1 tb5-nccl-plugin tb5-tools)
# What tb5-nccl-server adds: with --full the upgraded system becomes a
# server install, whose exporter the booted system checks under systemd.
SERVER_PKGS=(tb5-nccl-server tb5-exporter)
# The guest's test service (ci/vm/system-lib.sh).
GUEST=tb5-install-guest


in_root() {
	tb5_chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive "$@"
}

# The version of a deb in DIR: prints e.g. 0.2.0-1.
deb_version() {
	dpkg-deb -f "$(find "$1" -name 'tb5-dkms_*.deb' -print -quit)" Version
}

make_base() {
	local tmp mirror

	# One maker at a time: ci/test.sh's lanes, and the main job in the
	# fresh system, which shares this cache, may all want it at once.
	mkdir -p "$BASE_DIR"
	exec 8>"$BASE_DIR/.lock"
	flock -n 8 || { echo "waiting for another maker of $BASE"; flock 8; }
	if [[ -f $BASE && ${TB5_KREFRESH:-0} != 1 ]]; then
		echo "cached: $BASE ($(du -h "$BASE" | cut -f1))"
		flock -u 8
		return 0
	fi
	mirror=$(tb5_mirror)
	tmp=$BASE_DIR/tmp-root
	rm -rf "$tmp"
	mkdir -p "$BASE_DIR"
	tb5_retry bash -c 'rm -rf "$1" && debootstrap --variant=minbase bookworm "$1" "$2"' \
		_ "$tmp" "$mirror"
	# What a Debian 12 installation has: the release, its updates and
	# security suites.
	cat >"$tmp/etc/apt/sources.list" <<-EOF
		deb $mirror bookworm main
		deb $mirror bookworm-updates main
		deb ${mirror%/debian}/debian-security bookworm-security main
	EOF
	cat >"$tmp/etc/apt/apt.conf.d/99tb5-ci" <<-'EOF'
		APT::Install-Recommends "false";
		APT::Sandbox::User "root";
		DPkg::Lock::Timeout "600";
	EOF
	echo tb5-vm >"$tmp/etc/hostname"
	tb5_retry tb5_chroot "$tmp" apt-get -q update
	tb5_retry tb5_chroot "$tmp" env DEBIAN_FRONTEND=noninteractive \
		apt-get -q install -y "${BASE_PKGS[@]}"
	# An ordinary user for the tests (added to group tb5 after the install).
	tb5_chroot "$tmp" useradd --create-home --shell /bin/bash tester
	tb5_chroot "$tmp" apt-get clean
	rm -rf "$tmp/var/lib/apt/lists/"*
	tar -C "$tmp" --zstd -cf "$BASE.tmp" .
	mv "$BASE.tmp" "$BASE"
	rm -rf "$tmp"
	flock -u 8
	echo "made: $BASE ($(du -h "$BASE" | cut -f1))"
}

# The signed repository (ci/release.sh) served on 127.0.0.1 (the chroot
# shares the host's network), and its tampered copies.
serve_repo() {
	local py f

	[[ -n $(find "$DEBS" -name '*.deb' 2>/dev/null) ]] ||
		tb5_die "no debs in $DEBS: run ci/package.sh deb first"
	py=$(command -v /usr/bin/python3 || command -v python3) || tb5_die "no python3"
	HTTP_PORT=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	local also=()
	if ((FULL)); then
		PREV_DEBS=$("$TB5_ROOT/ci/prev-release.sh" --dir)
		also=(--also "$PREV_DEBS")
	fi
	"$TB5_ROOT/ci/release.sh" --out "$RELEASE" --uri "http://127.0.0.1:$HTTP_PORT/apt" "${also[@]}"
	rm -rf "$WWW"
	mkdir -p "$WWW"
	cp -a "$RELEASE/apt" "$WWW/apt"
	# Altered after signing: one line of the signed text, in the
	# clearsigned InRelease and in Release (under Release.gpg).
	cp -a "$WWW/apt" "$WWW/bad-release"
	for f in InRelease Release; do
		sed -i 's/^Label: tb5$/Label: tb5 (not what was signed)/' "$WWW/bad-release/dists/$SUITE/$f"
		grep -q '^Label: tb5 (not' "$WWW/bad-release/dists/$SUITE/$f" ||
			tb5_die "could not alter $f"
	done
	# Altered after indexing: 16 bytes in the middle of tb5-tools's deb,
	# the size kept.
	cp -a "$WWW/apt" "$WWW/bad-package"
	f=$(find "$WWW/bad-package/pool/main" -name "tb5-tools_$(deb_version "$DEBS")_*.deb")
	printf 'not what was hashed' |
		dd of="$f" bs=1 seek=$(($(stat -c %s "$f") / 2)) conv=notrunc status=none
	"$py" -m http.server --bind 127.0.0.1 --directory "$WWW" "$HTTP_PORT" \
		>"$WORK/http.log" 2>&1 &
	HTTP_PID=$!
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$HTTP_PORT") 2>/dev/null && break
		sleep 0.2
	done
	(exec 3<>"/dev/tcp/127.0.0.1/$HTTP_PORT") 2>/dev/null || tb5_die "the HTTP server did not start"
	echo "serving $WWW on http://127.0.0.1:$HTTP_PORT/ (pid $HTTP_PID)"
}

stop_http() {
	[[ -n $HTTP_PID ]] || return 0
	kill "$HTTP_PID" 2>/dev/null || true
	wait "$HTTP_PID" 2>/dev/null || true
	HTTP_PID=
}

# apt_isolated NAME URI-PATH [SIGNED-BY] -- APT-ARGS...: apt-get in the new
# system with only the repository at http://127.0.0.1:PORT/URI-PATH, in its
# own lists and archives (the system's apt state is not touched; NAME's
# lists are kept from one call to the next); prints apt's output, returns
# apt's status.
apt_isolated() {
	local name=$1 path=$2 signed=$3 d=/tmp/apt-$1
	shift 4
	mkdir -p "$ROOT$d/parts" "$ROOT$d/lists/partial" "$ROOT$d/archives/partial"
	{
		echo "Types: deb"
		echo "URIs: http://127.0.0.1:$HTTP_PORT/$path"
		echo "Suites: $SUITE"
		echo "Components: main"
		[[ -z $signed ]] || echo "Signed-By: $signed"
	} >"$ROOT$d/parts/tb5.sources"
	# (in the archives directory: where apt-get download puts a deb)
	in_root sh -c 'cd "$1" && shift && exec "$@"' sh "$d/archives" \
		apt-get -q -o Dir::Etc::SourceList="$d/parts/tb5.sources" \
		-o Dir::Etc::SourceParts="$d/none" -o Dir::State::Lists="$d/lists" \
		-o Dir::Cache::Archives="$d/archives" -o Dir::Cache::pkgcache= \
		-o Dir::Cache::srcpkgcache= "$@" </dev/null 2>&1
}

# refused WHAT PATTERN -- COMMAND...: COMMAND must fail with apt's PATTERN.
refused() {
	local what=$1 pattern=$2 out rc=0
	shift 3
	out=$("$@") || rc=$?
	if ((rc == 0)) || ! grep -qE "$pattern" <<<"$out"; then
		printf '%s\n' "$out"
		tb5_die "$what: apt did not refuse it with '$pattern' (status $rc)"
	fi
	echo "refused, $what (status $rc):"
	grep -E "$pattern" <<<"$out" | sed 's/^/    /' | head -n 3
}

# As an operator: the keyring from the repository, the sources file, apt
# update; and what apt must refuse.
repo_setup() {
	local url=http://127.0.0.1:$HTTP_PORT/apt out fpr keyring=/usr/share/keyrings/tb5-archive-keyring.gpg

	rm -rf "$ROOT"/tmp/apt-*
	refused "the repository without its key" 'NO_PUBKEY|is not signed' -- \
		apt_isolated nokey apt '' -- update
	in_root /usr/lib/apt/apt-helper download-file "$url/tb5-archive-keyring.deb" \
		/tmp/tb5-archive-keyring.deb
	in_root dpkg -i /tmp/tb5-archive-keyring.deb
	rm -f "$ROOT/tmp/tb5-archive-keyring.deb"
	fpr=$(in_root gpg --show-keys --with-colons "$keyring" 2>/dev/null |
		awk -F: '$1 == "fpr" { print $10; exit }') || fpr=
	if [[ -z $fpr ]]; then
		# The base system has no gpg: gpgv checks the served InRelease
		# against the keyring instead.
		in_root /usr/lib/apt/apt-helper download-file "$url/dists/$SUITE/InRelease" /tmp/InRelease
		in_root gpgv --keyring "$keyring" /tmp/InRelease 2>&1 | grep -i 'good signature' ||
			tb5_die "the served InRelease does not verify against $keyring"
		rm -f "$ROOT/tmp/InRelease"
	else
		[[ $fpr == "$(cat "$RELEASE/apt/FINGERPRINT")" ]] ||
			tb5_die "the keyring holds $fpr, the release key is $(cat "$RELEASE/apt/FINGERPRINT")"
	fi
	echo "installed tb5-archive-keyring: $keyring (key $(cat "$RELEASE/apt/FINGERPRINT"))"
	in_root /usr/lib/apt/apt-helper download-file "$url/tb5.sources" \
		/etc/apt/sources.list.d/tb5.sources
	grep -q "^Signed-By: $keyring\$" "$ROOT/etc/apt/sources.list.d/tb5.sources" ||
		tb5_die "tb5.sources has no Signed-By: $keyring"
	! grep -rq 'trusted=yes\|Trusted: yes' "$ROOT/etc/apt/sources.list" "$ROOT/etc/apt/sources.list.d" ||
		tb5_die "a trusted=yes source in the new system"
	sed 's/^/    /' "$ROOT/etc/apt/sources.list.d/tb5.sources"
	# The signed repository, with the key of Signed-By: no warning.
	out=$(apt_isolated good apt "$keyring" -- update) ||
		{ printf '%s\n' "$out"; tb5_die "apt update of the signed repository failed"; }
	! grep -qE '^(W|E):' <<<"$out" ||
		{ printf '%s\n' "$out"; tb5_die "apt update of the signed repository warned"; }
	echo "apt update: the signed repository verifies against tb5-archive-keyring"
	refused "InRelease and Release altered after signing" 'BADSIG' -- \
		apt_isolated badrelease bad-release "$keyring" -- update
	apt_isolated badpackage bad-package "$keyring" -- update >/dev/null ||
		tb5_die "apt update of bad-package (its metadata intact) failed"
	refused "a deb altered after indexing" 'Hash Sum mismatch|File has unexpected size' -- \
		apt_isolated badpackage bad-package "$keyring" -- download tb5-tools
	rm -rf "$ROOT"/tmp/apt-*
}

fresh_root() {
	tb5_sys_unpack "$ROOT"
	# Downloads (the mirror's, never tb5's) are kept between runs; the
	# system starts with what the cache holds.
	mkdir -p "$ARCHIVES"
	find "$ARCHIVES" -name '*.deb' ! -name 'tb5*' ! -name 'libtb5*' \
		-exec cp -t "$ROOT/var/cache/apt/archives/" {} +
	repo_setup
	tb5_retry in_root apt-get -q update
	KVER=$(tb5_sys_kver "$ROOT")
	echo "the new system's kernel: $KVER"
	snapshot >"$WORK/files-before"
}

# Every file and directory of the system, but the state that apt, dpkg
# and the logs keep.
snapshot() {
	(cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev \
		-o -path ./run -o -path ./tmp -o -path ./var/cache -o -path ./var/log \
		-o -path ./var/lib/apt -o -path ./var/lib/dpkg \) -prune \
		-o -print | sort)
}

apt_install() {
	# No --force-conf*: a conffile question would fail the run (stdin is
	# /dev/null), which is the test.
	in_root apt-get -q install -y "$@" </dev/null
	find "$ROOT/var/cache/apt/archives" -name '*.deb' ! -name 'tb5*' ! -name 'libtb5*' \
		-exec cp -n -t "$ARCHIVES/" {} +
}

check_installed() {
	local want=$1 ring=$2 status

	for p in "${MINIMAL_PKGS[@]}"; do
		status=$(in_root dpkg-query -W -f='${Version} ${db:Status-Status}' "$p")
		[[ $status == "$want installed" ]] || tb5_die "$p: '$status', expected $want installed"
	done
	status=$(in_root dkms status -m tb5 -k "$KVER")
	echo "dkms status: $status"
	[[ $status == *"tb5/${want%-*}, $KVER"*": installed"* ]] ||
		tb5_die "DKMS has not installed tb5 ${want%-*} for $KVER"
	# Only this version: an upgrade took the old one out of DKMS.
	status=$(in_root dkms status -m tb5)
	[[ $(grep -c . <<<"$status") == 1 ]] || tb5_die "DKMS has more than tb5 ${want%-*}: $status"
	# (beside the version directories DKMS keeps a link per kernel)
	local vers
	vers=$(find "$ROOT/var/lib/dkms/tb5" -mindepth 1 -maxdepth 1 -type d -printf '%f\n')
	[[ $vers == "${want%-*}" ]] || tb5_die "/var/lib/dkms/tb5 holds ${vers//$'\n'/ }"
	[[ $(cd "$ROOT/usr/src" && echo tb5-*) == "tb5-${want%-*}" ]] ||
		tb5_die "/usr/src holds $(cd "$ROOT/usr/src" && echo tb5-*)"
	local ko
	ko=$(find "$ROOT/lib/modules/$KVER/updates/dkms" -name 'tb5.ko*' -print -quit 2>/dev/null)
	[[ -n $ko ]] || tb5_die "no tb5.ko in /lib/modules/$KVER/updates/dkms"
	[[ $(modinfo -F version "$ko") == "${want%-*}" ]] ||
		tb5_die "${ko#"$ROOT"} is version $(modinfo -F version "$ko"), expected ${want%-*}"
	in_root getent group tb5 || tb5_die "no group tb5"
	grep -qx "options tb5 ring_size=$ring" "$ROOT/etc/modprobe.d/tb5.conf" ||
		tb5_die "/etc/modprobe.d/tb5.conf does not say ring_size=$ring"
	if compgen -G "$ROOT/etc/modprobe.d/tb5.conf.dpkg-*" >/dev/null; then
		tb5_die "dpkg left $(echo "$ROOT"/etc/modprobe.d/tb5.conf.dpkg-*)"
	fi
	echo "installed: ${MINIMAL_PKGS[*]} $want; tb5.ko ${want%-*} (modinfo) in DKMS for $KVER, no other version; group tb5; tb5.conf ring_size=$ring"
}

# The man pages the server install brings (tools, exporter, module), as
# installed, rendered by man -l without a warning (man-db of the host: the
# test system has none).
check_man_pages() {
	local page out

	tb5_install_deps "${TB5_DEPS_PACKAGE[@]}"
	for page in man1/tb5-selftest.1.gz man1/tb5-perf.1.gz man8/tb5-exporter.8.gz man4/tb5.4.gz; do
		[[ -f $ROOT/usr/share/man/$page ]] || tb5_die "no /usr/share/man/$page in the installed system"
		out=$(LC_ALL=C.UTF-8 MANROFFSEQ="" MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$ROOT/usr/share/man/$page" 2>&1 >/dev/null) ||
			tb5_die "man -l /usr/share/man/$page failed: $out"
		[[ -z $out ]] || tb5_die "man -l /usr/share/man/$page warns: $out"
	done
	echo "man pages installed: tb5-selftest(1), tb5-perf(1), tb5-exporter(8), tb5(4); man -l renders each without warnings"
}

install_packages() {
	local cur prev p

	cur=$(deb_version "$DEBS")
	if ((FULL)); then
		prev=$(deb_version "$PREV_DEBS")
		echo "installing the previous release, $prev (packaging/previous-release), from the signed repository"
		apt_install "${MINIMAL_PKGS[@]/%/=$prev}"
		check_installed "$prev" 4096
		# An operator's edit, which the upgrade must keep.
		sed -i 's/^options tb5 ring_size=4096$/options tb5 ring_size=2048/' \
			"$ROOT/etc/modprobe.d/tb5.conf"
		echo "upgrading to $cur"
		apt_install tb5-nccl-minimal
		check_installed "$cur" 2048
		echo "the upgrade kept the edited conffile (ring_size=2048); DKMS: tb5 ${prev%-*} removed, ${cur%-*} built"
		echo "installing tb5-nccl-server: the exporter's unit, enabled by its postinst"
		apt_install tb5-nccl-server
		[[ -L $ROOT/etc/systemd/system/multi-user.target.wants/tb5-exporter.service ]] ||
			tb5_die "installing tb5-nccl-server did not enable tb5-exporter.service"
		check_man_pages
	else
		apt_install tb5-nccl-minimal
		check_installed "$cur" 4096
	fi
	in_root usermod -aG tb5 tester
}

# The guest's test: ci/vm/install-guest.sh as a systemd service once the
# system is up.
prepare_guest() {
	tb5_sys_guest "$ROOT" "$GUEST" "$TB5_ROOT/ci/vm/install-guest.sh" \
		"TB5_GUEST_FULL=$FULL" "TB5_GUEST_SERVER=$FULL" \
		"TB5_GUEST_RING=$( ((FULL)) && echo 2048 || echo 4096)" \
		"TB5_GUEST_VERSION=$(deb_version "$DEBS" | sed 's/-[^-]*$//')"
}

purge_check() {
	local left

	in_root apt-get -q purge -y "${MINIMAL_PKGS[@]}" "${SERVER_PKGS[@]}" </dev/null
	# tb5-archive-keyring stays, as the repository does (the operator's
	# setup from before the install; the autopkgtest installs from it).
	left=$(in_root dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' 'tb5*' 'libtb5*' 2>/dev/null |
		awk '$2 != "un" && $1 != "tb5-archive-keyring"' || true)
	[[ -z $left ]] || tb5_die "dpkg still knows: $left"
	[[ -z $(in_root dkms status -m tb5) ]] || tb5_die "DKMS still has tb5: $(in_root dkms status -m tb5)"
	! in_root getent group tb5 || tb5_die "the group tb5 is still there"
	! grep -qw tb5 "$ROOT/etc/group" "$ROOT/etc/gshadow" || tb5_die "tb5 still in /etc/group or /etc/gshadow"

	# Every path that is new since before the install must belong to a
	# package still installed (tb5-dkms's dependencies: dkms, the
	# compiler) or be their state; nothing may carry tb5's name.
	snapshot >"$WORK/files-after"
	# dpkg lists /bin/... where merged /usr has /usr/bin/...
	cat "$ROOT"/var/lib/dpkg/info/*.list |
		sed -E 's#^/(bin|sbin|lib|lib32|lib64|libx32)(/|$)#/usr/\1\2#; s#^#.#' |
		sort -u >"$WORK/files-owned"
	comm -13 "$WORK/files-before" "$WORK/files-after" | comm -23 - "$WORK/files-owned" |
		grep -vE '^\./(etc/(ld\.so\.cache|group-|gshadow-|passwd-|shadow-|subgid-|subuid-)|var/lib/dkms/mok\.(key|pub)|etc/alternatives/|var/lib/systemd/|usr/share/info/dir|usr/lib/python3.*/__pycache__|var/lib/ucf/|etc/systemd/system/)' |
		grep -vxF -f <(tb5_sys_guest_files "$ROOT" "$GUEST") \
		>"$WORK/files-left.raw" || true
	# update-alternatives' links (of the dependencies' programs) are
	# nobody's in dpkg's lists.
	local f
	while IFS= read -r f; do
		[[ -L $ROOT/$f && $(readlink "$ROOT/$f") == /etc/alternatives/* ]] ||
			printf '%s\n' "$f"
	done <"$WORK/files-left.raw" >"$WORK/files-left"
	if [[ -s $WORK/files-left ]]; then
		cat "$WORK/files-left"
		tb5_die "purge left the files above behind"
	fi
	left=$(comm -13 "$WORK/files-before" "$WORK/files-after" | grep -i tb5 |
		grep -vxF -f <(tb5_sys_guest_files "$ROOT" "$GUEST") || true)
	[[ -z $left ]] || tb5_die "purge left files named tb5: $left"
	echo "purged: no tb5 package, no DKMS entry, no group tb5, no file left"
}

autopkgtest() {
	in_root sh -c '/usr/lib/dkms/dkms-autopkgtest tb5-dkms' </dev/null 2>&1 | tee "$WORK/dkms-autopkgtest.log"
	grep -q "^I: PASS $KVER" "$WORK/dkms-autopkgtest.log" ||
		tb5_die "the DKMS autopkgtest did not pass for $KVER ($WORK/dkms-autopkgtest.log)"
	echo "DKMS autopkgtest: PASS on $KVER"
}

main() {
	local start=$SECONDS
	while (($#)); do
		case $1 in
		--full) FULL=1 ;;
		--base) BASE_ONLY=1 ;;
		*) tb5_die "usage: ${0##*/} [--full]" ;;
		esac
		shift
	done
	tb5_install_deps "${TB5_DEPS_PACKAGE[@]}"
	mkdir -p "$WORK"

	tb5_timed "base system (debootstrap, cached)" make_base
	((BASE_ONLY == 0)) || return 0
	trap stop_http EXIT
	tb5_timed "signed apt repository (ci/release.sh), served on 127.0.0.1" serve_repo
	tb5_timed "fresh system: keyring, tb5.sources, tampered repositories refused" fresh_root
	if ((FULL)); then
		tb5_timed "apt install: previous release, edit, upgrade" install_packages
	else
		tb5_timed "apt install tb5-nccl-minimal" install_packages
	fi
	prepare_guest
	tb5_timed "disk image" tb5_sys_image "$ROOT" "$WORK/root.img"
	tb5_timed "boot, modprobe, tb5-selftest, tb5-perf (QEMU TCG)" \
		tb5_sys_boot "$ROOT" "$WORK/root.img" "$KVER" "$WORK/console.log" install-guest.sh
	if ((FULL)); then
		tb5_timed "apt purge" purge_check
		tb5_timed "DKMS autopkgtest (dkms-autopkgtest)" autopkgtest
	fi
	stop_http
	tb5_banner "package-install: summary ($(tb5_fmt_secs $((SECONDS - start))))"
	printf '%s\n' "${TB5_STEP_TIMES[@]}"
	((SYS_BOOT_RETRIES == 0)) || printf '%s\n' "${SYS_BOOT_RETRY_LINES[@]}"
	echo "package-install: passed ($SYS_BOOT_RETRIES VM boot(s) retried)"
}

tb5_rerun_as_root "$@"
main "$@"
