#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/package-install.sh [--full|--base] - tb5's debs installed into a fresh Debian
# 12 and booted there:
#
#   1. a local apt repository (apt-ftparchive) of the debs of ci/package.sh
#      (build-pkg-deb/packages, and with --full build-pkg-deb/packages-prev)
#   2. a fresh Debian 12 made by debootstrap with its kernel, its headers,
#      systemd and udev (cached as a tarball in $TB5_KCACHE/pkg-base, made
#      again with TB5_KREFRESH=1), unpacked anew for every run
#   3. in it: `apt install tb5-nccl-minimal` (DKMS builds tb5.ko for that
#      system's kernel); with --full, the previous build (package release 0)
#      first, its /etc/modprobe.d/tb5.conf edited (ring_size=2048), then the
#      upgrade, which must keep the edit, then tb5-nccl-server (the
#      exporter's unit, enabled by its postinst)
#   4. the system booted under QEMU (TCG) with its own kernel, initramfs,
#      systemd and udev; ci/vm/install-guest.sh runs there as a systemd
#      service: modprobe tb5 takes ring_size from the conffile, the nodes
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

FULL=0
BASE_ONLY=0
WORK=$TB5_ROOT/build-pkg-vm
ROOT=$WORK/root
BASE_DIR=$TB5_KCACHE/pkg-base
BASE=$BASE_DIR/bookworm.tar.zst
ARCHIVES=$TB5_KCACHE/pkg-apt-archives
DEBS=$TB5_ROOT/build-pkg-deb/packages
PREV_DEBS=$TB5_ROOT/build-pkg-deb/packages-prev
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
TIMES=()
BOOT_RETRIES=0
BOOT_RETRY_LINES=()

timed() {
	local name=$1 start=$SECONDS
	shift
	tb5_banner "package-install: $name"
	"$@"
	TIMES+=("$(printf '  %-48s %s' "$name" "$(tb5_fmt_secs $((SECONDS - start)))")")
}

in_root() {
	tb5_chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive "$@"
}

# The version of a deb in DIR: prints e.g. 0.1.0-1.
deb_version() {
	dpkg-deb -f "$(find "$1" -name 'tb5-dkms_*.deb' -print -quit)" Version
}

make_base() {
	local tmp mirror

	if [[ -f $BASE && ${TB5_KREFRESH:-0} != 1 ]]; then
		echo "cached: $BASE ($(du -h "$BASE" | cut -f1))"
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
	echo "made: $BASE ($(du -h "$BASE" | cut -f1))"
}

# The repository: every deb of this build (and of the previous one), with
# Packages and Release made by apt-ftparchive, in the new system's /srv.
make_repo() {
	local repo=$ROOT/srv/tb5-repo

	[[ -n $(find "$DEBS" -name '*.deb' 2>/dev/null) ]] ||
		tb5_die "no debs in $DEBS: run ci/package.sh deb first"
	mkdir -p "$repo"
	cp "$DEBS"/*.deb "$repo/"
	if ((FULL)); then
		[[ -n $(find "$PREV_DEBS" -name '*.deb' 2>/dev/null) ]] ||
			tb5_die "no debs in $PREV_DEBS: run ci/package.sh deb first"
		cp "$PREV_DEBS"/*.deb "$repo/"
	fi
	(cd "$repo" && apt-ftparchive packages . >Packages &&
		apt-ftparchive release . >Release)
	echo "deb [trusted=yes] file:/srv/tb5-repo ./" >"$ROOT/etc/apt/sources.list.d/tb5.list"
	echo "repository: $(grep -c '^Package:' "$repo/Packages") packages in /srv/tb5-repo"
}

fresh_root() {
	rm -rf "$ROOT"
	mkdir -p "$ROOT"
	tar -C "$ROOT" --zstd -xf "$BASE"
	make_repo
	# Downloads are kept between runs; the system starts with what the
	# cache holds.
	mkdir -p "$ARCHIVES"
	find "$ARCHIVES" -name '*.deb' -exec cp -t "$ROOT/var/cache/apt/archives/" {} +
	tb5_retry in_root apt-get -q update
	KVER=$(basename "$(find "$ROOT/lib/modules" -mindepth 1 -maxdepth 1 -type d | sort -V | tail -n1)")
	echo "the new system's kernel: $KVER"
	snapshot >"$WORK/files-before"
}

# Every file and directory of the system, but the state that apt, dpkg
# and the logs keep.
snapshot() {
	(cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev \
		-o -path ./run -o -path ./tmp -o -path ./var/cache -o -path ./var/log \
		-o -path ./var/lib/apt -o -path ./var/lib/dpkg -o -path ./srv/tb5-repo \) -prune \
		-o -print | sort)
}

apt_install() {
	# No --force-conf*: a conffile question would fail the run (stdin is
	# /dev/null), which is the test.
	in_root apt-get -q install -y "$@" </dev/null
	find "$ROOT/var/cache/apt/archives" -name '*.deb' -exec cp -n -t "$ARCHIVES/" {} +
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
	[[ -n $(find "$ROOT/lib/modules/$KVER/updates/dkms" -name 'tb5.ko*' 2>/dev/null) ]] ||
		tb5_die "no tb5.ko in /lib/modules/$KVER/updates/dkms"
	in_root getent group tb5 || tb5_die "no group tb5"
	grep -qx "options tb5 ring_size=$ring" "$ROOT/etc/modprobe.d/tb5.conf" ||
		tb5_die "/etc/modprobe.d/tb5.conf does not say ring_size=$ring"
	if compgen -G "$ROOT/etc/modprobe.d/tb5.conf.dpkg-*" >/dev/null; then
		tb5_die "dpkg left $(echo "$ROOT"/etc/modprobe.d/tb5.conf.dpkg-*)"
	fi
	echo "installed: ${MINIMAL_PKGS[*]} $want; tb5.ko in DKMS for $KVER; group tb5; tb5.conf ring_size=$ring"
}

install_packages() {
	local cur prev p

	cur=$(deb_version "$DEBS")
	if ((FULL)); then
		prev=$(deb_version "$PREV_DEBS")
		echo "installing the previous build, $prev"
		apt_install "${MINIMAL_PKGS[@]/%/=$prev}"
		check_installed "$prev" 4096
		# An operator's edit, which the upgrade must keep.
		sed -i 's/^options tb5 ring_size=4096$/options tb5 ring_size=2048/' \
			"$ROOT/etc/modprobe.d/tb5.conf"
		echo "upgrading to $cur"
		apt_install tb5-nccl-minimal
		check_installed "$cur" 2048
		echo "the upgrade kept the edited conffile (ring_size=2048)"
		echo "installing tb5-nccl-server: the exporter's unit, enabled by its postinst"
		apt_install tb5-nccl-server
		[[ -L $ROOT/etc/systemd/system/multi-user.target.wants/tb5-exporter.service ]] ||
			tb5_die "installing tb5-nccl-server did not enable tb5-exporter.service"
	else
		apt_install tb5-nccl-minimal
		check_installed "$cur" 4096
	fi
	in_root usermod -aG tb5 tester
}

# The guest's test: a systemd service that runs install-guest.sh once the
# system is up, then powers off.
prepare_guest() {
	install -m 0755 "$TB5_ROOT/ci/vm/install-guest.sh" "$ROOT/usr/local/sbin/tb5-install-guest"
	cat >"$ROOT/etc/tb5-install-guest.env" <<-EOF
		TB5_GUEST_FULL=$FULL
		TB5_GUEST_SERVER=$FULL
		TB5_GUEST_RING=$( ((FULL)) && echo 2048 || echo 4096)
	EOF
	cat >"$ROOT/etc/systemd/system/tb5-install-guest.service" <<-'EOF'
		[Unit]
		Description=tb5 install test (ci/vm/install-guest.sh)
		After=multi-user.target systemd-udevd.service
		[Service]
		Type=oneshot
		EnvironmentFile=/etc/tb5-install-guest.env
		ExecStart=/usr/local/sbin/tb5-install-guest
		StandardOutput=tty
		StandardError=tty
		TTYPath=/dev/ttyS0
		[Install]
		WantedBy=multi-user.target
	EOF
	ln -sf /etc/systemd/system/tb5-install-guest.service \
		"$ROOT/etc/systemd/system/multi-user.target.wants/tb5-install-guest.service"
	# Nothing on the console but the kernel, systemd and the test: no
	# login prompt.
	ln -sf /dev/null "$ROOT/etc/systemd/system/serial-getty@ttyS0.service"
	ln -sf /dev/null "$ROOT/etc/systemd/system/getty@tty1.service"
	echo "/dev/vda / ext4 rw,relatime 0 1" >"$ROOT/etc/fstab"
}

make_image() {
	local mib

	in_root apt-get clean
	mib=$(($(du -sm --exclude=./srv "$ROOT" | cut -f1) + 768))
	rm -f "$WORK/root.img"
	mke2fs -q -t ext4 -L tb5-root -d "$ROOT" "$WORK/root.img" "${mib}M"
	echo "disk image: $WORK/root.img, ${mib} MiB"
}

boot() {
	local vmlinuz=$ROOT/boot/vmlinuz-$KVER initrd=$ROOT/boot/initrd.img-$KVER
	local log=$WORK/console.log rc=0 r

	[[ -f $vmlinuz && -f $initrd ]] || tb5_die "no $vmlinuz or $initrd"
	tb5_install_deps qemu-system-x86
	# ci/vm/boot-lib.sh boots it as it boots ci/vm/run.sh's VMs: a boot that
	# never reaches install-guest.sh's start marker (a panic, no marker
	# within the boot watchdog, a QEMU error) is retried, at most twice; a
	# failed test is not. systemd and udev take longer to get there than an
	# initramfs: the watchdog defaults to 300 s. The disk is a snapshot
	# (writes are dropped at exit): a retry boots the image as it was made,
	# and nothing reads it back afterwards.
	TB5_VM_SHOW=(grep --line-buffered -a -E '^(TB5-|guest:|PASS|FAIL|SKIP|[0-9]+ passed|tb5-|#|  )')
	tb5_vm_qemu
	echo "booting $KVER under QEMU TCG (log: $log; boot watchdog ${TB5_VM_BOOT_TIMEOUT:-300} s)"
	TB5_VM_BOOT_TIMEOUT=${TB5_VM_BOOT_TIMEOUT:-300} tb5_vm_boot "$KVER" "$log" "${VM_QEMU[@]}" \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-drive "file=$WORK/root.img,format=raw,if=virtio,snapshot=on" \
		-append "root=/dev/vda rw $VM_APPEND loglevel=5 systemd.show_status=0" || true
	BOOT_RETRIES=${#VM_RETRY_REASONS[@]}
	for r in "${VM_RETRY_REASONS[@]}"; do
		BOOT_RETRY_LINES+=("boot retried: $r")
	done
	TB5_VM_TAIL=1 tb5_vm_verdict "$KVER" "$log" install-guest.sh || rc=$?
	case $rc in
	0) echo "the booted system passed" ;;
	1) tb5_die "the guest's test failed ($log)" ;;
	*) tb5_die "the system never reached its test in $VM_BOOTS boot(s): $VM_KIND ($log)" ;;
	esac
}

purge_check() {
	local left

	in_root apt-get -q purge -y "${MINIMAL_PKGS[@]}" "${SERVER_PKGS[@]}" </dev/null
	left=$(in_root dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' 'tb5*' 'libtb5*' 2>/dev/null |
		awk '$2 != "un"' || true)
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
		grep -vE '^\./(etc/(ld\.so\.cache|group-|gshadow-|passwd-|shadow-|subgid-|subuid-)|var/lib/dkms/mok\.(key|pub)|etc/alternatives/|var/lib/systemd/|usr/share/info/dir|usr/lib/python3.*/__pycache__|var/lib/ucf/|etc/systemd/system/|etc/tb5-install-guest\.env|usr/local/sbin/tb5-install-guest)' \
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
		grep -vE '^\./(etc/tb5-install-guest\.env|usr/local/sbin/tb5-install-guest|etc/systemd/system/(multi-user\.target\.wants/)?tb5-install-guest\.service)$' || true)
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

	timed "base system (debootstrap, cached)" make_base
	((BASE_ONLY == 0)) || return 0
	timed "fresh system, local apt repository" fresh_root
	if ((FULL)); then
		timed "apt install: previous build, edit, upgrade" install_packages
	else
		timed "apt install tb5-nccl-minimal" install_packages
	fi
	prepare_guest
	timed "disk image" make_image
	timed "boot, modprobe, tb5-selftest, tb5-perf (QEMU TCG)" boot
	if ((FULL)); then
		timed "apt purge" purge_check
		timed "DKMS autopkgtest (dkms-autopkgtest)" autopkgtest
	fi
	tb5_banner "package-install: summary ($(tb5_fmt_secs $((SECONDS - start))))"
	printf '%s\n' "${TIMES[@]}"
	((BOOT_RETRIES == 0)) || printf '%s\n' "${BOOT_RETRY_LINES[@]}"
	echo "package-install: passed ($BOOT_RETRIES VM boot(s) retried)"
}

if ((EUID != 0)); then
	command -v sudo >/dev/null || tb5_die "run as root, or install sudo"
	exec sudo --preserve-env "$0" "$@"
fi
main "$@"
