# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# ci/vm/system-lib.sh - an installed Debian system (a root directory made
# from the cached base system of ci/package-install.sh) booted under QEMU
# with its own kernel, initramfs, systemd and udev, and a test script run
# there as a systemd service once the system is up. Shared by
# ci/package-install.sh (the debs, ci/vm/install-guest.sh) and
# ci/rpm-install.sh (the rpms, ci/vm/rpm-guest.sh); ci/deb-source.sh's
# machine testbed uses its root and image. Sourced after ci/kernel-lib.sh
# (and ci/vm/boot-lib.sh for tb5_sys_boot), never run.
#
# The guest's script prints TB5_VM_START_MARKER when it starts and
# "TB5-VM-RESULT: rc=N" last, then powers the machine off; ci/vm/boot-lib.sh
# judges the boot and the test.

# The cached base system (Debian 12 with its kernel, headers, systemd and
# udev), made by ci/package-install.sh --base.
TB5_SYS_BASE=$TB5_KCACHE/pkg-base/bookworm.tar.zst

# tb5_sys_unpack ROOT: ROOT made anew from the cached base system (made
# first where it is missing).
tb5_sys_unpack() {
	[[ -f $TB5_SYS_BASE ]] || "$TB5_ROOT/ci/package-install.sh" --base
	rm -rf "$1"
	mkdir -p "$1"
	tar -C "$1" --zstd -xf "$TB5_SYS_BASE"
}

# tb5_sys_kver ROOT: the newest kernel version installed in ROOT.
tb5_sys_kver() {
	basename "$(find "$1/lib/modules" -mindepth 1 -maxdepth 1 -type d | sort -V | tail -n1)"
}

# State of the last tb5_sys_boot, for the callers' summaries.
# shellcheck disable=SC2034  # read by the callers
SYS_BOOT_RETRIES=0
SYS_BOOT_RETRY_LINES=()

# tb5_sys_guest ROOT NAME SCRIPT [VAR=VALUE...]: SCRIPT installed in ROOT as
# /usr/local/sbin/NAME with ci/vm/guest-lib.sh, which it sources, as
# /usr/local/lib/tb5-guest-lib.sh; run by NAME.service (enabled, after
# multi-user.target and udev) with the VAR=VALUE lines as its environment
# (/etc/NAME.env), its output on the serial console. No login prompt on the
# console, and the root file system on /dev/vda.
tb5_sys_guest() {
	local root=$1 name=$2 script=$3 kv
	shift 3

	install -m 0755 "$script" "$root/usr/local/sbin/$name"
	install -D -m 0644 "$TB5_ROOT/ci/vm/guest-lib.sh" "$root/usr/local/lib/tb5-guest-lib.sh"
	: >"$root/etc/$name.env"
	for kv in "$@"; do
		printf '%s\n' "$kv" >>"$root/etc/$name.env"
	done
	cat >"$root/etc/systemd/system/$name.service" <<-EOF
		[Unit]
		Description=tb5 test in the booted system ($name)
		After=multi-user.target systemd-udevd.service
		[Service]
		Type=oneshot
		EnvironmentFile=/etc/$name.env
		ExecStart=/usr/local/sbin/$name
		StandardOutput=tty
		StandardError=tty
		TTYPath=/dev/ttyS0
		[Install]
		WantedBy=multi-user.target
	EOF
	mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
	ln -sf "/etc/systemd/system/$name.service" \
		"$root/etc/systemd/system/multi-user.target.wants/$name.service"
	# Nothing on the console but the kernel, systemd and the test.
	ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
	ln -sf /dev/null "$root/etc/systemd/system/getty@tty1.service"
	echo "/dev/vda / ext4 rw,relatime 0 1" >"$root/etc/fstab"
}

# tb5_sys_guest_files ROOT NAME: the paths tb5_sys_guest added, relative to
# ROOT as "./path" (for the callers' checks of what a purge left).
tb5_sys_guest_files() {
	local name=$2
	printf '%s\n' "./etc/$name.env" "./usr/local/sbin/$name" ./usr/local/lib/tb5-guest-lib.sh \
		"./etc/systemd/system/$name.service" \
		"./etc/systemd/system/multi-user.target.wants/$name.service"
}

# tb5_sys_image ROOT IMAGE [EXTRA-MIB]: an ext4 image of ROOT (apt's
# downloaded packages left out), with EXTRA-MIB (default 768) free.
tb5_sys_image() {
	local root=$1 img=$2 mib

	tb5_chroot "$root" apt-get clean
	mib=$(($(du -sm "$root" | cut -f1) + ${3:-768}))
	rm -f "$img"
	mke2fs -q -t ext4 -L tb5-root -d "$root" "$img" "${mib}M"
	echo "disk image: $img, ${mib} MiB"
}

# tb5_sys_boot ROOT IMAGE KVER LOG NAME: boots IMAGE with ROOT's kernel KVER
# and initramfs until NAME's test has run; dies unless it passed.
#
# It boots as ci/vm/run.sh's VMs do (ci/vm/boot-lib.sh): a boot that never
# reaches the test's start marker (a panic, no marker within the boot
# watchdog, a QEMU error) is retried, at most twice; a failed test is not.
# systemd and udev take longer to get there than an initramfs: the watchdog
# defaults to 300 s. The disk is a snapshot (writes are dropped at exit): a
# retry boots the image as it was made, and nothing reads it back.
tb5_sys_boot() {
	local root=$1 img=$2 kver=$3 log=$4 name=$5 rc=0 r
	local vmlinuz=$root/boot/vmlinuz-$kver initrd=$root/boot/initrd.img-$kver

	[[ -f $vmlinuz && -f $initrd ]] || tb5_die "no $vmlinuz or $initrd"
	tb5_install_deps "${TB5_DEPS_PACKAGE[@]}"
	# shellcheck disable=SC2034  # read by tb5_vm_boot (ci/vm/boot-lib.sh)
	TB5_VM_SHOW=(grep --line-buffered -a -E '^(TB5-|guest:|PASS|FAIL|SKIP|[0-9]+ passed|tb5-|#|  |rpm|Preparing|Updating|Cleaning|Verifying|Installing|dkms)')
	tb5_vm_qemu
	echo "booting $kver under QEMU TCG (log: $log; boot watchdog ${TB5_VM_BOOT_TIMEOUT:-300} s)"
	TB5_VM_BOOT_TIMEOUT=${TB5_VM_BOOT_TIMEOUT:-300} tb5_vm_boot "$kver" "$log" "${VM_QEMU[@]}" \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-drive "file=$img,format=raw,if=virtio,snapshot=on" \
		-append "root=/dev/vda rw $VM_APPEND loglevel=5 systemd.show_status=0" || true
	# shellcheck disable=SC2034  # read by the callers
	SYS_BOOT_RETRIES=${#VM_RETRY_REASONS[@]}
	SYS_BOOT_RETRY_LINES=()
	for r in "${VM_RETRY_REASONS[@]}"; do
		SYS_BOOT_RETRY_LINES+=("boot retried: $r")
	done
	TB5_VM_TAIL=1 tb5_vm_verdict "$kver" "$log" "$name" || rc=$?
	case $rc in
	0) echo "the booted system passed" ;;
	1) tb5_die "the guest's test failed ($log)" ;;
	*) tb5_die "the system never reached its test in $VM_BOOTS boot(s): $VM_KIND ($log)" ;;
	esac
}
