#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/secureboot.sh - tb5 on a Debian 12 that boots with UEFI Secure Boot on,
# the way cluster nodes boot: OVMF's Secure Boot firmware with Microsoft's
# keys (OVMF_CODE_4M.secboot.fd, OVMF_VARS_4M.ms.fd), the signed shim
# (EFI/BOOT/BOOTX64.EFI, its MOK manager mmx64.efi beside it), the signed
# grub and Debian's signed kernel, under QEMU (TCG, q35 with SMM).
#
# What the packages do runs where it runs fast: in a chroot of the system
# on the host (apt, dpkg, DKMS's builds and signatures, at native speed;
# under TCG they took most of an hour). What only a booted machine shows
# runs in the guest, with Secure Boot on. Step by step:
#
#   1. the system (chroot): the cached base Debian 12 of
#      ci/package-install.sh, with what a Secure Boot install of Debian 12
#      has (shim-signed, grub-efi-amd64-signed, mokutil, openssl), tb5's
#      signed apt repository (ci/release.sh) in /srv/tb5-apt with its
#      keyring and tb5.sources, bookworm-backports enabled; the debs of
#      tb5-nccl-minimal and of bookworm-backports' kernel downloaded
#   2. the operator's install (chroot): apt install tb5-nccl-minimal
#      (the mirror's debs from apt's cache, tb5's from its file:
#      repository); DKMS builds tb5.ko for the system's
#      kernel and signs it with the MOK it makes (/var/lib/dkms/mok.pub,
#      openssl). The chroot sees the SecureBoot variable as the booted
#      machine will (a tmpfs on /sys with efivars/SecureBoot-... = 1: the
#      host is no Secure Boot machine), so tb5-dkms prints what it prints
#      there, and its install output must say what to do (mokutil --import
#      /var/lib/dkms/mok.pub, reboot); tb5.ko's signer is DKMS's key. Then
#      the disk image (mke2fs -d) and an ESP (a GPT disk, mkfs.vfat and
#      mcopy: no loop device) with shim, the MOK manager, grub and grub.cfg
#   3. boot 1 (ci/vm/secureboot/guest.sh, phase install): Secure Boot on,
#      lockdown [integrity]; tb5.ko signed by the MOK; modprobe tb5
#      refused; tb5-selftest names the key and the mokutil command;
#      mokutil --import with a one-time password; reboot
#   4. boot 2: shim starts the MOK manager; console.py drives it on the
#      serial console: a key, Enroll MOK, Continue, Yes, the password,
#      Reboot
#   5. boot 3 (phase enrolled): the key enrolled (mokutil --test-key),
#      modprobe tb5 loads, tb5-selftest passes and names the key; copies
#      signed by another key, stripped of their signature and changed after
#      signing are refused, and tb5-selftest says which; power off
#   6. the kernel upgrade (chroot, after the enrollment): apt install -t
#      bookworm-backports linux-image-amd64 linux-headers-amd64; DKMS's
#      kernel hook builds tb5.ko for it and signs it with the same key (the
#      key file unchanged); /vmlinuz now the new kernel's; the disk image
#      made again from the system (what the guest wrote in boots 1-3 - its
#      logs and /var/lib/tb5-sb - is not carried over: the enrollment
#      lives in the firmware's variables, not on the disk)
#   7. boot 4 (phase upgraded): the new kernel, Secure Boot on, modprobe
#      tb5 with no new enrollment, tb5-selftest passes
#
# The MOK enrollment lives in the firmware's variable store (vars.fd, a copy
# of OVMF_VARS_4M.ms.fd made for each run), kept from one boot to the next.
# Every boot has a hard limit (TB5_SB_BOOT_LIMIT seconds, default 900; the
# system must reach its test within TB5_VM_BOOT_TIMEOUT, default 420) and a
# failed one prints the end of its console log. With nothing to install,
# a boot takes under a minute: mitigations=off on the kernel's command line
# was measured and gained nothing (boots 1 and 3: 37 s and 41 s without it,
# 35 s and 48 s with it), so the kernel boots as Debian's does; nor did one
# vCPU and 1 GiB (TB5_VM_SMP=1 TB5_VM_MEM=1024: 37, 7, 45 and 37 s for the
# four boots against 37, 8, 44 and 39 s), so the defaults stay. The timers
# and services a test boot has no use for are masked (apt's timers would
# start apt in the middle of a test).
#
# Work directory: build-sb-vm/ (root, root.img, esp.img, vars.fd, the
# console logs boot<N>.log, the install outputs apt-install.log and
# apt-kernel.log). Needs root (re-runs itself through sudo) and the debs of
# ci/package.sh deb. Knobs: TB5_KCACHE, TB5_VM_MEM, TB5_VM_SMP, TB5_VM_CPU
# (ci/vm/boot-lib.sh).
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kernel-lib.sh"
# shellcheck source=ci/vm/boot-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/vm/boot-lib.sh"
# shellcheck source=ci/vm/system-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/vm/system-lib.sh"

WORK=$TB5_ROOT/build-sb-vm
ROOT=$WORK/root
DEBS=$TB5_ROOT/build-pkg-deb/packages
ARCHIVES=$TB5_KCACHE/sb-apt-archives
OVMF=/usr/share/OVMF
GUEST=tb5-sb-guest
MOK=/var/lib/dkms/mok.pub
# The one-time password of the enrollment: mokutil asks for it, the MOK
# manager for it again.
PASSWORD=tb5-enroll
# What a Debian 12 installed on a UEFI machine with Secure Boot has: the
# signed boot chain, mokutil, and openssl (through ca-certificates), with
# which DKMS makes its signing key.
SB_PKGS=(shim-signed grub-efi-amd64-signed mokutil openssl ca-certificates)
# What a test boot has no use for: timers that would start apt or fstrim in
# the middle of a test, and services of a long-running machine.
SB_MASKED=(apt-daily.timer apt-daily-upgrade.timer fstrim.timer e2scrub_all.timer
	e2scrub_reap.service dpkg-db-backup.timer man-db.timer systemd-pstore.service
	systemd-tmpfiles-clean.timer)
# The kernel package of the upgrade.
BPO_KERNEL=(linux-image-amd64 linux-headers-amd64)
ESP_MIB=64
MOKMANAGER='Press any key to perform MOK management'
LIMIT=${TB5_SB_BOOT_LIMIT:-900}
# The SecureBoot variable (efivarfs: 4 bytes of attributes, BS|RT, then 1).
SB_VAR=SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
SYS_MOUNTED=0

in_root() {
	tb5_chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive "$@"
}

# sys_secureboot on|off: the chroot's /sys as the booted machine's shows
# Secure Boot (a tmpfs with efivars/SecureBoot-... = 1), or the empty
# directory again. Only the SecureBoot variable: no MokListRT, so mokutil
# there finds no key enrolled, as on the machine before the enrollment.
sys_secureboot() {
	if [[ $1 == on ]]; then
		mount -t tmpfs -o mode=0755,size=1m tb5-sb-sys "$ROOT/sys"
		SYS_MOUNTED=1
		mkdir -p "$ROOT/sys/firmware/efi/efivars"
		printf '\006\000\000\000\001' >"$ROOT/sys/firmware/efi/efivars/$SB_VAR"
	elif ((SYS_MOUNTED)); then
		umount "$ROOT/sys"
		SYS_MOUNTED=0
	fi
}

cleanup() {
	sys_secureboot off || true
}

# signed_by_mok KO (a path in the system): DKMS's key signed it.
signed_by_mok() {
	local signer

	signer=$(in_root modinfo -F signer "$1")
	[[ $signer == "DKMS module signing key" ]] ||
		tb5_die "$1 is signed by '$signer', not DKMS's key"
	echo "PASS $1: signed by '$signer' (sig_key $(in_root modinfo -F sig_key "$1"), $(in_root modinfo -F sig_hashalgo "$1"))"
}

# The system: the base Debian 12, the boot chain, tb5's repository as an
# operator adds it, and the debs of the install and the upgrade downloaded.
make_system() {
	local keyring=/usr/share/keyrings/tb5-archive-keyring.gpg mirror unit

	[[ -n $(find "$DEBS" -name 'tb5-dkms_*.deb' 2>/dev/null) ]] ||
		tb5_die "no debs in $DEBS: run ci/package.sh deb first"
	"$TB5_ROOT/ci/release.sh" --out "$WORK/release" --uri file:/srv/tb5-apt
	# A run killed between sys_secureboot on and off left its tmpfs.
	umount "$ROOT/sys" 2>/dev/null || true
	tb5_sys_unpack "$ROOT"
	mkdir -p "$ARCHIVES"
	find "$ARCHIVES" -name '*.deb' -exec cp -t "$ROOT/var/cache/apt/archives/" {} +
	cp -a "$WORK/release/apt" "$ROOT/srv/tb5-apt"
	in_root dpkg -i /srv/tb5-apt/tb5-archive-keyring.deb
	cp "$ROOT/srv/tb5-apt/tb5.sources" "$ROOT/etc/apt/sources.list.d/tb5.sources"
	grep -q "^Signed-By: $keyring\$" "$ROOT/etc/apt/sources.list.d/tb5.sources" ||
		tb5_die "tb5.sources has no Signed-By: $keyring"
	mirror=$(tb5_mirror)
	echo "deb $mirror bookworm-backports main" >"$ROOT/etc/apt/sources.list.d/backports.list"
	tb5_retry in_root apt-get -q update
	tb5_retry in_root apt-get -q install -y "${SB_PKGS[@]}" </dev/null
	# The install and the upgrade below take the mirror's debs from apt's
	# cache (the file: repository's are read in place).
	tb5_retry in_root apt-get -q install -y --download-only tb5-nccl-minimal </dev/null
	tb5_retry in_root apt-get -q install -y --download-only -t bookworm-backports \
		"${BPO_KERNEL[@]}" </dev/null
	find "$ROOT/var/cache/apt/archives" -name '*.deb' ! -name 'tb5*' ! -name 'libtb5*' \
		-exec cp -n -t "$ARCHIVES/" {} +
	[[ -L $ROOT/vmlinuz && -L $ROOT/initrd.img ]] ||
		tb5_die "the system has no /vmlinuz and /initrd.img links (grub.cfg boots them)"
	for unit in "${SB_MASKED[@]}"; do
		ln -sf /dev/null "$ROOT/etc/systemd/system/$unit"
	done
	tb5_sys_guest "$ROOT" "$GUEST" "$TB5_ROOT/ci/vm/secureboot/guest.sh" \
		"TB5_SB_PASSWORD=$PASSWORD"
	echo "the system: $(tb5_sys_kver "$ROOT"), $(in_root dpkg-query -W -f='${Package} ${Version}\n' shim-signed grub-efi-amd64-signed mokutil | tr '\n' ' ')"
}

# The operator's install, in the chroot that sees Secure Boot on: its
# output must say what to do, and tb5.ko must be signed by DKMS's key.
install_tb5() {
	local log=$WORK/apt-install.log kver ko rc=0

	kver=$(tb5_sys_kver "$ROOT")
	sys_secureboot on
	echo "\$ sudo apt install tb5-nccl-minimal"
	# (dpkg writes through a pty: its lines end in CR LF)
	in_root apt-get -q install -y tb5-nccl-minimal </dev/null 2>&1 | tr -d '\r' |
		tee "$log" || rc=$?
	sys_secureboot off
	((rc == 0)) || tb5_die "apt install tb5-nccl-minimal failed ($log)"
	grep -q "^Signing module " "$log" || tb5_die "DKMS did not sign tb5.ko ($log)"
	echo "PASS DKMS signed tb5.ko: $(grep -m1 '^Signing module ' "$log")"
	if ! grep -q "tb5-dkms: Secure Boot is on: the kernel loads tb5.ko only once the key DKMS" "$log" ||
		! grep -q "sudo mokutil --import $MOK" "$log" || ! grep -q "sudo reboot" "$log"; then
		tb5_die "the install output does not say to enroll $MOK and reboot ($log)"
	fi
	echo "PASS the install output says what to do (sudo mokutil --import $MOK, sudo reboot)"
	[[ -f $ROOT$MOK && -f $ROOT/var/lib/dkms/mok.key ]] || tb5_die "DKMS made no MOK ($MOK)"
	ko=$(in_root modinfo -k "$kver" -n tb5) || tb5_die "no tb5.ko for $kver"
	signed_by_mok "$ko"
	sha256sum <"$ROOT$MOK" >"$WORK/mok.sha256"
	# The test user, a member of tb5 as the operator makes the cluster's
	# users (the group comes with tb5-dkms).
	in_root usermod -aG tb5 tester
}

# The system's disk (ext4 of the root directory, apt's cache emptied) and,
# the first time, the firmware's variable store.
make_disk() {
	tb5_sys_image "$ROOT" "$WORK/root.img"
	[[ ${1:-} == keep-vars ]] && return 0
	cp "$OVMF/OVMF_VARS_4M.ms.fd" "$WORK/vars.fd"
	echo "variable store: $WORK/vars.fd (OVMF_VARS_4M.ms.fd: Microsoft's keys, Secure Boot on)"
}

# The kernel upgrade after the enrollment, in the chroot: DKMS's kernel hook
# builds and signs tb5.ko for the new kernel with the same key.
upgrade_kernel() {
	local log=$WORK/apt-kernel.log old new ko rc=0

	old=$(tb5_sys_kver "$ROOT")
	find "$ARCHIVES" -name '*.deb' -exec cp -n -t "$ROOT/var/cache/apt/archives/" {} +
	echo "\$ sudo apt install -t bookworm-backports ${BPO_KERNEL[*]}"
	in_root apt-get -q install -y -t bookworm-backports "${BPO_KERNEL[@]}" \
		</dev/null 2>&1 | tr -d '\r' >"$log" || rc=$?
	grep -E '^(Setting up linux-image|Sign command|Signing key|Public certificate|Signing module|dkms: |tb5|Building|Installing|Module build|E: )' "$log" || true
	((rc == 0)) || tb5_die "apt install of the newer kernel failed ($log)"
	new=$(tb5_sys_kver "$ROOT")
	[[ $new != "$old" ]] || tb5_die "no newer kernel than $old in /lib/modules"
	ko=$(in_root modinfo -k "$new" -n tb5) || tb5_die "DKMS built no tb5.ko for $new ($log)"
	signed_by_mok "$ko"
	sha256sum --status -c "$WORK/mok.sha256" <"$ROOT$MOK" ||
		tb5_die "$MOK changed in the upgrade: the enrolled key would no longer sign"
	echo "PASS $MOK unchanged: the enrolled key signed tb5.ko for $new"
	[[ $(readlink -f "$ROOT/vmlinuz") == "$ROOT/boot/vmlinuz-$new" ]] ||
		tb5_die "/vmlinuz is $(readlink "$ROOT/vmlinuz"), not the new kernel's"
	echo "PASS /vmlinuz is $new's: the next boot starts it"
	mkdir -p "$ROOT/var/lib/tb5-sb"
	echo "$new" >"$ROOT/var/lib/tb5-sb/new-kernel"
}

# make_esp PHASE: the EFI system partition as a GPT disk: shim as the
# removable-media loader, the MOK manager and grub beside it, grub.cfg
# where Debian's signed grub reads it (EFI/debian). grub boots /vmlinuz and
# /initrd.img, the links Debian's kernel packages keep on the newest kernel
# (so boot 4 starts the upgrade's).
make_esp() {
	local fat=$WORK/esp.fat img=$WORK/esp.img cfg=$WORK/grub.cfg

	tb5_vm_qemu
	cat >"$cfg" <<-EOF
		set timeout=0
		search --no-floppy --label --set=root tb5-root
		linux /vmlinuz root=/dev/vda rw $VM_APPEND loglevel=5 systemd.show_status=0 tb5sb.phase=$1
		initrd /initrd.img
		boot
	EOF
	rm -f "$fat" "$img"
	mkfs.vfat -C -n ESP "$fat" $(((ESP_MIB - 2) * 1024)) >/dev/null
	mmd -i "$fat" ::/EFI ::/EFI/BOOT ::/EFI/debian
	mcopy -i "$fat" "$ROOT/usr/lib/shim/shimx64.efi.signed" ::/EFI/BOOT/BOOTX64.EFI
	mcopy -i "$fat" "$ROOT/usr/lib/shim/mmx64.efi.signed" ::/EFI/BOOT/mmx64.efi
	mcopy -i "$fat" "$ROOT/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed" ::/EFI/BOOT/grubx64.efi
	mcopy -i "$fat" "$cfg" ::/EFI/debian/grub.cfg
	truncate -s "${ESP_MIB}M" "$img"
	printf 'label: gpt\nstart=2048, size=%d, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name=ESP\n' \
		$(((ESP_MIB - 2) * 2048)) | sfdisk -q "$img"
	dd if="$fat" of="$img" bs=1M seek=1 conv=notrunc status=none
	rm -f "$fat"
}

# boot N PHASE [CONSOLE-ARGS...]: boot N of the system, grub.cfg saying
# PHASE, until QEMU ends (the guest reboots or powers off); dies unless
# console.py succeeded and, for a phase, the guest's test passed.
boot() {
	local n=$1 phase=$2 log=$WORK/boot$1.log rc=0 line
	shift 2

	make_esp "$phase"
	tb5_vm_qemu
	echo "boot $n ($phase): log $log, limit $LIMIT s"
	python3 "$TB5_ROOT/ci/vm/secureboot/console.py" --log "$log" --timeout "$LIMIT" \
		--show '^(TB5-|guest:|PASS|FAIL|SKIP|\$ |console:|tb5-|    |Signing|Public|Sign command|Setting up (tb5|linux-image)|SecureBoot|\[)' \
		"$@" -- "${VM_QEMU[@]}" -machine q35,smm=on \
		-global driver=cfi.pflash01,property=secure,value=on \
		-drive "if=pflash,format=raw,unit=0,readonly=on,file=$OVMF/OVMF_CODE_4M.secboot.fd" \
		-drive "if=pflash,format=raw,unit=1,file=$WORK/vars.fd" \
		-drive "file=$WORK/root.img,format=raw,if=virtio" \
		-drive "file=$WORK/esp.img,format=raw,if=virtio,readonly=on" || rc=$?
	((rc == 0)) || tb5_die "boot $n ($phase) failed (console.py status $rc; $log)"
	[[ $phase != mokmanager ]] || return 0
	line=$(grep -a "^$TB5_VM_END_MARKER" "$log" | tail -n 1 || true)
	if [[ $line != "${TB5_VM_END_MARKER}0" ]]; then
		tail -n 40 "$log"
		tb5_die "boot $n ($phase): the guest's test failed (${line:-no end marker}; $log)"
	fi
	if grep -aF "${TB5_VM_BAD_PATTERNS[@]/#/-e}" "$log" | head -n 5 | grep .; then
		tb5_die "boot $n ($phase): the kernel complained (above; $log)"
	fi
	echo "boot $n ($phase): passed"
}

main() {
	local start=$SECONDS

	tb5_install_deps "${TB5_DEPS_PACKAGE[@]}" "${TB5_DEPS_SECUREBOOT[@]}"
	mkdir -p "$WORK"
	trap cleanup EXIT
	tb5_timed "the system: base, boot chain, tb5's repository, debs (chroot)" make_system
	tb5_timed "apt install tb5-nccl-minimal: DKMS builds and signs (chroot)" install_tb5
	tb5_timed "disk image, variable store" make_disk
	tb5_timed "boot 1: Secure Boot, refused, tb5-selftest, mokutil --import" \
		boot 1 install --start "$TB5_VM_START_MARKER" --boot-timeout "${TB5_VM_BOOT_TIMEOUT:-420}" \
		--forbid "$MOKMANAGER"
	tb5_timed "boot 2: the MOK manager (Enroll MOK)" \
		boot 2 mokmanager --boot-timeout 300 --start "$MOKMANAGER" \
		--expect "$MOKMANAGER" --send ' ' \
		--expect 'Enroll MOK' --send '{down}{enter}' \
		--expect 'View key 0' --send '{down}{enter}' \
		--expect 'Enroll the key' --send '{down}{enter}' \
		--expect 'Password' --send "$PASSWORD{enter}" \
		--expect 'Reboot' --send '{enter}'
	tb5_timed "boot 3: enrolled, loaded, refusals" \
		boot 3 enrolled --start "$TB5_VM_START_MARKER" --boot-timeout "${TB5_VM_BOOT_TIMEOUT:-420}" \
		--forbid "$MOKMANAGER"
	tb5_timed "kernel upgrade: DKMS builds and signs (chroot)" upgrade_kernel
	tb5_timed "disk image again (the upgraded system)" make_disk keep-vars
	tb5_timed "boot 4: the new kernel, no new enrollment" \
		boot 4 upgraded --start "$TB5_VM_START_MARKER" --boot-timeout "${TB5_VM_BOOT_TIMEOUT:-420}" \
		--forbid "$MOKMANAGER"
	tb5_banner "secureboot: summary ($(tb5_fmt_secs $((SECONDS - start))))"
	printf '%s\n' "${TB5_STEP_TIMES[@]}"
	echo "secureboot: passed"
}

tb5_rerun_as_root "$@"
main "$@"
