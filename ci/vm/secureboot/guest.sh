#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ci/vm/secureboot/guest.sh - runs in the Debian 12 system that
# ci/secureboot.sh boots with UEFI Secure Boot on (OVMF with Microsoft's
# keys, the signed shim, grub and Debian kernel), as a systemd service
# (root) once the system is up. The phase comes from the kernel's command
# line (tb5sb.phase=, set by the host in grub.cfg). What the packages do
# (apt install tb5-nccl-minimal, the kernel upgrade, DKMS's builds and
# signatures) the host did in a chroot of this system, at native speed; here
# is what only a booted machine can show:
#
#   install   Secure Boot is on and the kernel locked down (integrity);
#             tb5.ko, installed by DKMS, is signed by its MOK
#             (/var/lib/dkms/mok.pub); modprobe tb5 is refused;
#             tb5-selftest names the key and the mokutil command; mokutil
#             --import with a one-time password; tb5-selftest says the key
#             waits for the reboot; reboot (the host drives the MOK manager
#             on the next boot)
#   enrolled  mokutil --test-key: enrolled; modprobe tb5 loads it;
#             tb5-selftest passes every check as a member of tb5 and names
#             the key; a tb5.ko signed by another key, one whose signature
#             was stripped and one changed after signing are refused by
#             insmod and, put in place of the installed one, by modprobe,
#             and tb5-selftest says which; power off (the host installs
#             the newer kernel)
#   upgraded  the newer kernel (bookworm-backports, named by the host in
#             /var/lib/tb5-sb/new-kernel) runs; its tb5.ko, built and
#             signed by DKMS in the upgrade, loads with no new enrollment;
#             tb5-selftest passes; power off
#
# Prints "TB5-VM-START:" first and "TB5-VM-RESULT: rc=N" last.
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive

# shellcheck source=ci/vm/guest-lib.sh
source /usr/local/lib/tb5-guest-lib.sh

MOK=/var/lib/dkms/mok.pub
PASSWORD=${TB5_SB_PASSWORD:?}
STATE=/var/lib/tb5-sb
PHASE=$(sed -n 's/.*tb5sb\.phase=\([a-z]*\).*/\1/p' /proc/cmdline)
KVER=$(uname -r)
SELFTEST=$STATE/selftest-$PHASE

# reboot_now: the end marker, and the reboot the operator types (QEMU,
# started with -no-reboot, exits; the host starts the next boot).
reboot_now() {
	echo "TB5-VM-RESULT: rc=0"
	sync
	systemctl reboot --force --force
	exit 0
}

# secure_boot: Secure Boot on, as mokutil and the kernel see it.
secure_boot() {
	local state lockdown

	state=$(mokutil --sb-state 2>&1)
	echo "\$ mokutil --sb-state"
	echo "$state"
	[[ $state == *"SecureBoot enabled"* ]] || fail "mokutil --sb-state: $state"
	lockdown=$(cat /sys/kernel/security/lockdown 2>&1)
	echo "\$ cat /sys/kernel/security/lockdown"
	echo "$lockdown"
	[[ $lockdown == *"[integrity]"* ]] || fail "the kernel is not locked down (integrity): $lockdown"
	echo "PASS Secure Boot on (mokutil --sb-state), kernel $KVER locked down: $lockdown"
	dmesg | grep -E 'Secure boot enabled|Lockdown|Loaded X.509 cert|EFI: Loaded cert' | sed 's/^/    dmesg: /'
}

# selftest WANT-RC WHAT: tb5-selftest as tester, text and JSON; its exit
# status must be WANT-RC; the text in $SELFTEST.txt, the JSON in
# $SELFTEST.json.
selftest() {
	local rc=0

	echo "\$ tb5-selftest    # as tester, $2"
	as_tester tb5-selftest >"$SELFTEST.txt" 2>&1 || rc=$?
	cat "$SELFTEST.txt"
	[[ $rc == "$1" ]] || fail "tb5-selftest exited $rc, expected $1 ($2)"
	as_tester tb5-selftest --json >"$SELFTEST.json" 2>/dev/null || true
}

# says_line CHECK STATUS TEXT...: tb5-selftest's line of CHECK has STATUS
# and holds each TEXT (the line and its hint).
says_line() {
	local check=$1 status=$2 line t
	shift 2

	line=$(awk -v c="$check" '$1 ~ /^(PASS|FAIL|SKIP)$/ { on = ($2 == c) } on' "$SELFTEST.txt")
	[[ $line =~ ^$status\ +$check\  ]] || fail "tb5-selftest's $check is not $status: $line"
	for t in "$@"; do
		[[ $line == *"$t"* ]] || fail "tb5-selftest's $check does not say '$t': $line"
	done
	grep -q "\"name\": *\"$check\"" "$SELFTEST.json" || fail "tb5-selftest --json has no $check"
	echo "PASS tb5-selftest: $check $status, saying: $*"
}

# refused WHAT COMMAND...: COMMAND fails; prints its message and the
# kernel's.
refused() {
	local what=$1 out rc=0
	shift

	dmesg -C
	out=$("$@" 2>&1) || rc=$?
	echo "\$ $*"
	echo "$out"
	((rc != 0)) || fail "$what: $* succeeded"
	dmesg | tail -n 3 | sed 's/^/    dmesg: /'
	REFUSED_MSG=$out
}

signer_is_mok() {
	local ko=$1 signer

	signer=$(modinfo -F signer "$ko")
	[[ $signer == "DKMS module signing key" ]] ||
		fail "$ko is signed by '$signer', not DKMS's key"
	echo "PASS $ko: signed by '$signer' (modinfo: sig_key $(modinfo -F sig_key "$ko"), $(modinfo -F sig_hashalgo "$ko"))"
}

phase_install() {
	local ko

	secure_boot
	ko=$(modinfo -n tb5) || fail "modinfo -n tb5"
	signer_is_mok "$ko"

	refused "modprobe before the key is enrolled" modprobe tb5
	[[ ! -d /sys/module/tb5 ]] || fail "tb5 loaded before its key was enrolled"
	echo "PASS modprobe tb5 refused before the enrollment"

	selftest 1 "before the enrollment"
	says_line secureboot FAIL "$MOK" "mokutil --import $MOK" reboot

	echo "\$ mokutil --import $MOK    # the one-time password typed twice"
	printf '%s\n%s\n' "$PASSWORD" "$PASSWORD" | mokutil --import "$MOK" ||
		fail "mokutil --import $MOK"
	mokutil --list-new | grep -E 'Subject:|CN=' | head -n 2
	mokutil --list-new | grep -q 'CN *= *DKMS module signing key' ||
		fail "mokutil --list-new does not list DKMS's key"
	echo "PASS the key waits for the MOK manager (mokutil --list-new)"
	selftest 1 "the key imported, not yet enrolled"
	says_line secureboot FAIL "$MOK" reboot
	reboot_now
}

# bad_copies DIR KO: in DIR, three copies of KO that the kernel must refuse.
bad_copies() {
	local dir=$1 ko=$2 kbuild n signer

	mkdir -p "$dir"
	kbuild=$(ls -d /usr/lib/linux-kbuild-* | sort -V | tail -n 1)
	# Another key: what someone's own build signs with.
	openssl req -new -x509 -nodes -days 1 -subj "/CN=not the DKMS key" -newkey rsa:2048 \
		-keyout "$dir/other.key" -outform DER -out "$dir/other.der" >/dev/null 2>&1 ||
		fail "openssl req"
	# A module carries one signature: the other key signs the unsigned one.
	strip_sig "$ko" "$dir/stripped.ko"
	cp "$dir/stripped.ko" "$dir/other-key.ko"
	"$kbuild/scripts/sign-file" sha256 "$dir/other.key" "$dir/other.der" "$dir/other-key.ko" ||
		fail "sign-file"
	# Changed after signing: 16 bytes in the middle, the signature kept.
	cp "$ko" "$dir/altered.ko"
	n=$(stat -c %s "$ko")
	printf 'changed by hand!' | dd of="$dir/altered.ko" bs=1 seek=$((n / 3)) conv=notrunc status=none
	signer=$(modinfo -F signer "$dir/altered.ko")
	echo "copies of $ko: other-key.ko (signer '$(modinfo -F signer "$dir/other-key.ko")')," \
		"stripped.ko (signer '$(modinfo -F signer "$dir/stripped.ko")')," \
		"altered.ko (signer '$signer', 16 bytes changed at $((n / 3)))"
}

# strip_sig KO OUT: KO without its appended signature (the marker, the
# 12-byte module_signature whose last 4 bytes are the big-endian length,
# the signature).
strip_sig() {
	local size siglen

	size=$(stat -c %s "$1")
	[[ $(tail -c 28 "$1") == "~Module signature appended~" ]] || fail "$1 is not signed"
	siglen=$(tail -c 32 "$1" | head -c 4 | od -An -tu1 | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
	head -c $((size - 28 - 12 - siglen)) "$1" >"$2"
}

phase_enrolled() {
	local ko dir=$STATE/bad kind want out

	secure_boot
	echo "\$ mokutil --test-key $MOK"
	out=$(mokutil --test-key "$MOK" 2>&1)
	echo "$out"
	[[ $out == *"is already enrolled"* ]] || fail "mokutil --test-key: $out"
	echo "PASS $MOK is enrolled (mokutil --test-key)"
	ko=$(modinfo -n tb5) || fail "modinfo -n tb5"
	signer_is_mok "$ko"
	load
	echo "PASS modprobe tb5 loopback=1 loaded it"
	nodes root:tb5 660
	selftest 0 "after the enrollment"
	says_line secureboot PASS "DKMS module signing key" "$MOK"
	unload

	bad_copies "$dir" "$ko"
	cp "$ko" "$dir/good.ko"
	for kind in other-key stripped altered; do
		refused "insmod of $kind.ko" insmod "$dir/$kind.ko"
		echo "PASS insmod $kind.ko refused: $REFUSED_MSG"
		cp "$dir/$kind.ko" "$ko"
		refused "modprobe of $kind.ko in place of tb5.ko" modprobe tb5
		selftest 1 "$kind.ko in place of $ko"
		case $kind in
		other-key) want="not the key" ;;
		stripped) want="not signed" ;;
		altered) want="changed after" ;;
		esac
		says_line secureboot FAIL "$want"
		cp "$dir/good.ko" "$ko"
	done
	load
	unload
	echo "PASS the original tb5.ko loads again"

	finish 0
}

phase_upgraded() {
	local want ko out

	want=$(cat "$STATE/new-kernel") || fail "no $STATE/new-kernel (the host writes it)"
	[[ $KVER == "$want" ]] || fail "booted $KVER, expected the new kernel $want"
	echo "PASS booted the new kernel $KVER"
	secure_boot
	out=$(mokutil --test-key "$MOK" 2>&1)
	[[ $out == *"is already enrolled"* ]] || fail "mokutil --test-key: $out"
	ko=$(modinfo -n tb5) || fail "modinfo -n tb5"
	signer_is_mok "$ko"
	load
	echo "PASS modprobe tb5 on $KVER, with no new enrollment"
	selftest 0 "on the new kernel"
	says_line secureboot PASS "DKMS module signing key" "$MOK"
	unload
	finish 0
}

main() {
	echo "TB5-VM-START: kernel $KVER, phase $PHASE"
	echo "guest: up $(cut -d' ' -f1 /proc/uptime) s when the test starts"
	mkdir -p "$STATE"
	SELFTEST=$STATE/selftest-$PHASE
	case $PHASE in
	install) phase_install ;;
	enrolled) phase_enrolled ;;
	upgraded) phase_upgraded ;;
	*) fail "no phase on the kernel's command line (tb5sb.phase=): $(cat /proc/cmdline)" ;;
	esac
}

main
