#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ci/vm/install-guest.sh - runs inside the Debian 12 system that
# ci/package-install.sh installed tb5-nccl-minimal into and booted under
# QEMU, as a systemd service (root) once the system is up:
#
#   - modprobe tb5 loopback=1 takes ring_size from /etc/modprobe.d/tb5.conf
#     ($TB5_GUEST_RING: 4096, the default, or 2048 after the upgrade test's
#     edit)
#   - the loaded module is this build's version, $TB5_GUEST_VERSION
#     (/sys/module/tb5/version and modinfo; after the upgrade test: not the
#     previous release's)
#   - /dev/tb5_0 and /dev/tb5_1 appear with group tb5, mode 0660
#   - tb5-selftest passes run by "tester", an unprivileged member of tb5
#   - a short tb5-perf over the loop pair, as tester
#   - with TB5_GUEST_FULL=1: the udev rule reaches nodes that existed
#     before it (the package's postinst, run as dpkg runs it on install),
#     and ring_size=1024 written to the conffile takes effect after a reload
#   - with TB5_GUEST_SERVER=1 (tb5-nccl-server installed): the exporter's
#     unit was enabled by the install and started at boot, answers on
#     port 9435 with the loop pair's tb5_link_* series (its dynamic user
#     reads the counters through group tb5), scores OK or better in
#     systemd-analyze security (printed), and stops cleanly
#
# Prints "TB5-VM-START:" first (the system reached the test),
# "TB5-VM-RESULT: rc=N" last, and powers the machine off.
set -uo pipefail

RING=${TB5_GUEST_RING:-4096}
FULL=${TB5_GUEST_FULL:-0}
SERVER=${TB5_GUEST_SERVER:-0}
VERSION=${TB5_GUEST_VERSION:-}
# shellcheck source=ci/vm/guest-lib.sh
source /usr/local/lib/tb5-guest-lib.sh
CONF=$TB5_GUEST_CONF
RULE=$TB5_GUEST_RULE

# exporter: tb5-exporter under systemd, tb5 loaded with its loop pair.
exporter() {
	local unit=tb5-exporter.service i body score result status

	[[ $(systemctl is-enabled "$unit") == enabled ]] ||
		fail "$unit is '$(systemctl is-enabled "$unit")' after the install, expected enabled"
	wait_active "$unit" "after boot"
	echo "PASS $unit enabled by the install and running since boot (user $(systemctl show -p User --value "$unit"), dynamic)"
	for ((i = 0; i < 50; i++)); do
		body=$(scrape) && [[ $body == *'tb5_link_counters_available{link="tb5_1"} 1'* ]] && break
		sleep 0.2
	done
	grep -q '^tb5_up 1$' <<<"$body" || fail "the exporter's scrape has no tb5_up 1"
	for n in 0 1; do
		grep -q "^tb5_link_tx_bytes_total{link=\"tb5_$n\"} [0-9]" <<<"$body" ||
			fail "no tb5_link_tx_bytes_total for tb5_$n (counters: $(grep counters_available <<<"$body"))"
	done
	echo "PASS GET :9435/metrics: the loop pair's series ($(grep -c '^tb5_link_' <<<"$body") tb5_link_* samples, counters read through group tb5)"
	score=$(systemd-analyze security "$unit" 2>/dev/null | grep 'Overall exposure level')
	echo "systemd-analyze security: $score"
	[[ $score =~ level\ for\ [^:]*:\ ([0-9.]+)\ (SAFE|OK) ]] ||
		fail "systemd-analyze security scores $unit worse than OK: $score"
	echo "PASS systemd-analyze security: ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
	systemctl stop "$unit" || fail "systemctl stop $unit"
	result=$(systemctl show -p Result --value "$unit")
	status=$(systemctl show -p ExecMainStatus --value "$unit")
	[[ $(systemctl is-active "$unit") == inactive && $result == success && $status == 0 ]] ||
		fail "after systemctl stop: $(systemctl is-active "$unit"), result $result, status $status"
	journalctl -u "$unit" -b --no-pager | grep 'tb5-exporter: stopped' >/dev/null ||
		fail "the exporter did not log its stop"
	echo "PASS systemctl stop: inactive, result success, exit status 0"
}

main() {
	# The start marker: the system booted and the test begins (the host
	# tells a boot that never got here from a failed test).
	echo "TB5-VM-START: kernel $(uname -r), $(nproc) CPUs"
	say "kernel $(uname -r), tb5-dkms $(dpkg-query -W -f='${Version}' tb5-dkms)," \
		"udev $(udevadm --version)"
	say "$CONF: $(grep '^options' "$CONF")"
	[[ -f /lib/modules/$(uname -r)/updates/dkms/tb5.ko ]] ||
		ls /lib/modules/"$(uname -r)"/updates/dkms/tb5.ko* >/dev/null 2>&1 ||
		fail "no tb5.ko from DKMS for $(uname -r)"

	load
	ring "$RING" "from $CONF"
	if [[ -n $VERSION ]]; then
		got=$(cat /sys/module/tb5/version 2>/dev/null)
		[[ $got == "$VERSION" ]] || fail "the loaded tb5 is version '$got', expected $VERSION"
		got=$(modinfo -F version tb5)
		[[ $got == "$VERSION" ]] || fail "modinfo tb5 says version '$got', expected $VERSION"
		echo "PASS the loaded module is tb5 $VERSION (/sys/module/tb5/version, modinfo)"
	fi
	nodes root:tb5 660
	id tester
	as_tester tb5-selftest || fail "tb5-selftest as tester (group tb5)"
	echo "PASS tb5-selftest as tester"
	# Timings under TCG mean nothing: this shows the installed tool works.
	as_tester tb5-perf --loop --wait --test bw,lat --bw-sizes 4K:1M:16 \
		--lat-sizes 8:4K:8 --duration 0.05 --verify --no-progress ||
		fail "tb5-perf as tester"
	echo "PASS tb5-perf as tester"
	if [[ $SERVER == 1 ]]; then
		exporter
	fi
	unload

	if [[ $FULL == 1 ]]; then
		# Nodes that exist before the rule does: without the rule they
		# are root's (devtmpfs), and the package's postinst, run as
		# dpkg runs it after unpacking, reaches them.
		mv "$RULE" /run/60-tb5.rules.away
		udevadm control --reload
		load
		nodes root:root 600
		mv /run/60-tb5.rules.away "$RULE"
		/var/lib/dpkg/info/tb5-dkms.postinst configure \
			"$(dpkg-query -W -f='${Version}' tb5-dkms)" ||
			fail "tb5-dkms.postinst configure"
		nodes root:tb5 660
		echo "PASS the postinst applied the udev rule to nodes already present"
		unload

		sed -i "s/^options tb5 ring_size=$RING\$/options tb5 ring_size=1024/" "$CONF"
		load
		ring 1024 "after editing $CONF and reloading"
		as_tester tb5-selftest >/dev/null || fail "tb5-selftest after the reload"
		echo "PASS tb5-selftest with ring_size=1024"
		unload
	fi
	finish 0
}

main
