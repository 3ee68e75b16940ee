#!/bin/bash
# SPDX-License-Identifier: MIT
# (fail exits; shellcheck then takes the functions after it for unreachable)
# shellcheck disable=SC2317
#
# ci/vm/rpm-guest.sh - runs inside the Debian 12 system that ci/rpm-install.sh
# prepared (Debian's rpm and dkms installed, no tb5 package) and booted under
# QEMU, as a systemd service (root) once the system is up. tb5's rpms are in
# /srv/rpms/1 (this tree, release 1), /srv/rpms/2 (the same tree packaged
# again as release 2) and /srv/rpms/3 (release 3, whose packaged
# /etc/modprobe.d/tb5.conf changed). With udev and systemd running, as on an
# operator's machine:
#
#   1. rpm -i of every rpm: %post adds the group tb5 and applies the udev
#      rule, %posttrans has DKMS build and install tb5.ko for the running
#      kernel, tb5-exporter's %post presets its unit (enabled: Debian's
#      presets enable what they do not name). modprobe tb5 takes ring_size
#      from the conffile, the nodes are root:tb5 0660, tb5-selftest passes as
#      "tester" (added to tb5, as docs/install.md says), the exporter started by systemctl answers
#      GET /metrics
#   2. the conffile edited (ring_size=2048) and the loaded module's nodes
#      set to root:root 0600 (nodes the rule never reached), then rpm -U to
#      release 2: the old %preun's dkms remove and the new %posttrans's dkms
#      install leave DKMS with tb5 for the running kernel, the new %post's
#      udevadm trigger gives the present nodes group tb5 mode 0660, and
#      %postun restarts the running exporter; after a reload of the module
#      the edit is in effect and tb5-selftest passes
#   3. rpm -U to release 3: the edit stays, release 3's file is written as
#      tb5.conf.rpmnew
#   4. rpm -e of every tb5 package with the exporter running: %preun stops
#      and disables it, DKMS's entry, tb5.ko, /usr/src/tb5-*, the udev rule
#      and the group are gone (modprobe tb5 fails), and the edited conffile
#      is kept as tb5.conf.rpmsave
#
# `rpm-guest.sh installed RELEASE RING` runs only the check of what is
# installed (as ci/rpm-install.sh's dnf steps do in a chroot of the same
# system, with TB5_GUEST_SERVICE=0 and TB5_GUEST_KVER naming its kernel)
# and exits 0 or 1.
#
# rpm -i and -U run with --nodeps (see ci/rpm-install.sh: what tb5 needs
# from the distribution is installed by dpkg, which rpm cannot see); every
# step checks that the requirements among tb5's own packages are met, and
# rpm -e runs without --nodeps.
#
# Prints "TB5-VM-START:" first, "TB5-VM-RESULT: rc=N" last, and powers the
# machine off.
set -uo pipefail

# shellcheck source=ci/vm/guest-lib.sh
source /usr/local/lib/tb5-guest-lib.sh
CONF=$TB5_GUEST_CONF
RULE=$TB5_GUEST_RULE
UNIT=tb5-exporter.service
KVER=${TB5_GUEST_KVER:-$(uname -r)}

timed() {
	local t=$SECONDS
	"$@" || fail "$*"
	say "$* took $((SECONDS - t)) s"
}

selftest() {
	as_tester tb5-selftest >/tmp/selftest.log 2>&1 ||
		{ cat /tmp/selftest.log; fail "tb5-selftest as tester ($1)"; }
	echo "PASS tb5-selftest as tester ($1): $(tail -n 1 /tmp/selftest.log)"
}

# Every requirement of tb5's installed packages on a tb5 capability is
# provided by an installed tb5 package (rpm -q --whatprovides takes no
# version: the requirements are NAME = VERSION-RELEASE).
own_deps() {
	local -a pkgs
	local unmet
	mapfile -t pkgs < <(rpm -qa --qf '%{NAME}\n' 'tb5*')
	unmet=$(comm -23 \
		<(rpm -q --requires "${pkgs[@]}" | grep -E '^(lib)?tb5' | sed 's/ *$//' | sort -u) \
		<(rpm -q --provides "${pkgs[@]}" | sed 's/ *$//' | sort -u))
	[[ -z $unmet ]] || fail "unmet among tb5's packages: $unmet"
	echo "PASS requirements among tb5's packages: all met (${#pkgs[@]} packages)"
}

# installed RELEASE RING: rpm's view, DKMS for the running kernel, the rule,
# the group and the conffile.
installed() {
	local rel=$1 ring=$2 v st
	v=$(rpm -q --qf '%{VERSION}' tb5-dkms) || fail "tb5-dkms is not installed"
	[[ $(rpm -q --qf '%{RELEASE}' tb5-dkms) == "$rel" ]] ||
		fail "tb5-dkms is not release $rel: $(rpm -q tb5-dkms)"
	own_deps
	st=$(dkms status -m tb5 -k "$KVER")
	say "dkms status: $st"
	[[ $st == *"tb5/$v, $KVER"*": installed"* ]] || fail "DKMS has not installed tb5 $v for $KVER"
	[[ $(dkms status -m tb5 | grep -c .) == 1 ]] || fail "DKMS has more than tb5 $v: $(dkms status -m tb5)"
	[[ $(modinfo -k "$KVER" -F version tb5) == "$v" ]] ||
		fail "modinfo tb5: version $(modinfo -k "$KVER" -F version tb5), expected $v"
	[[ $(rpm -qf "$RULE") == tb5-dkms-* ]] || fail "$RULE is not tb5-dkms's"
	getent group tb5 >/dev/null || fail "no group tb5"
	[[ $(rpm -qc tb5-dkms) == "$CONF" ]] || fail "rpm -qc tb5-dkms: '$(rpm -qc tb5-dkms)', expected $CONF"
	grep -qx "options tb5 ring_size=$ring" "$CONF" || fail "$CONF does not say ring_size=$ring"
	echo "PASS installed: release $rel; tb5.ko $v by DKMS for $KVER; udev rule; group tb5; $CONF ring_size=$ring"
}

exporter_up() {
	local i body
	wait_active "$UNIT" "($1)"
	for ((i = 0; i < 150; i++)); do
		body=$(scrape 2>/dev/null) && grep -q '^tb5_up 1$' <<<"$body" && break
		sleep 0.2
	done
	if ! grep -q '^tb5_up 1$' <<<"$body"; then
		systemctl status --no-pager -l "$UNIT"
		journalctl -u "$UNIT" -b --no-pager | tail -n 20
		fail "GET :9435/metrics has no tb5_up 1 (30 s)"
	fi
	echo "PASS $UNIT active, GET :9435/metrics answers ($1)"
}

step_install() {
	[[ -z $(rpm -qa) ]] || fail "the rpmdb is not empty: $(rpm -qa)"
	[[ -d /run/systemd/system && -d /run/udev ]] || fail "systemd or udev is not running"
	timed rpm -iv --nodeps /srv/rpms/1/*.rpm
	installed 1 4096
	[[ $(systemctl is-enabled "$UNIT") == enabled ]] ||
		fail "$UNIT is '$(systemctl is-enabled "$UNIT")' after rpm -i, expected enabled (%systemd_post's preset)"
	echo "PASS $UNIT enabled by %post (preset)"
	# The operator's step after the install (docs/install.md).
	usermod -aG tb5 tester || fail "usermod -aG tb5 tester"
	load
	ring 4096 "from $CONF"
	nodes root:tb5 660
	selftest "release 1"
	systemctl start "$UNIT" || fail "systemctl start $UNIT"
	exporter_up "release 1"
}

step_upgrade_2() {
	local n before after
	sed -i 's/^options tb5 ring_size=4096$/options tb5 ring_size=2048/' "$CONF"
	local v
	# (rpm -V exits 1 when it finds a difference: the one looked for)
	v=$(rpm -V tb5-dkms) || true
	grep -q " $CONF\$" <<<"$v" || fail "rpm -V does not see the edited $CONF: $v"
	echo "PASS rpm -V: $(grep " $CONF\$" <<<"$v")"
	# Nodes that the rule did not reach (as nodes made before the rule
	# existed are): the new %post must apply it to them.
	for n in 0 1; do
		chgrp root "/dev/tb5_$n" && chmod 0600 "/dev/tb5_$n"
	done
	nodes root:root 600
	before=$(systemctl show -p ExecMainStartTimestampMonotonic --value "$UNIT")
	timed rpm -Uv --nodeps /srv/rpms/2/*.rpm
	installed 2 2048
	[[ ! -e $CONF.rpmnew && ! -e $CONF.rpmsave ]] || fail "the upgrade left $(ls "$CONF".rpm*)"
	echo "PASS the upgrade kept the edited $CONF (%config(noreplace), no .rpmnew: the packaged file did not change)"
	nodes root:tb5 660
	echo "PASS the new %post applied the udev rule to the nodes already present"
	after=$(systemctl show -p ExecMainStartTimestampMonotonic --value "$UNIT")
	[[ $after != "$before" ]] || fail "%postun did not restart the running $UNIT"
	exporter_up "restarted by the upgrade's %postun"
	systemctl stop "$UNIT" || fail "systemctl stop $UNIT"
	unload
	load
	ring 2048 "the edited $CONF after the upgrade"
	selftest "release 2"
	unload
}

step_upgrade_3() {
	timed rpm -Uv --nodeps /srv/rpms/3/*.rpm
	installed 3 2048
	[[ -f $CONF.rpmnew ]] || fail "no $CONF.rpmnew after an upgrade that changed it"
	if ! grep -qx 'options tb5 ring_size=4096' "$CONF.rpmnew" ||
		! grep -qx '# release 3 (ci/rpm-install.sh)' "$CONF.rpmnew"; then
		fail "$CONF.rpmnew is not release 3's file"
	fi
	echo "PASS the upgrade to release 3 kept the edit and wrote release 3's file as $CONF.rpmnew"
	rm "$CONF.rpmnew"
}

step_erase() {
	local -a pkgs
	local left
	systemctl start "$UNIT" || fail "systemctl start $UNIT"
	exporter_up "before rpm -e"
	mapfile -t pkgs < <(rpm -qa --qf '%{NAME}\n' 'tb5*')
	timed rpm -e "${pkgs[@]}"
	left=$(rpm -qa)
	[[ -z $left ]] || fail "rpm still has: $left"
	[[ $(systemctl is-active "$UNIT") != active ]] || fail "$UNIT still runs after rpm -e"
	systemctl daemon-reload
	[[ $(systemctl is-enabled "$UNIT" 2>&1) != enabled ]] || fail "$UNIT is still enabled after rpm -e"
	[[ -z $(find /etc/systemd/system -name "$UNIT") ]] || fail "$UNIT's enablement links are still there"
	echo "PASS %preun stopped and disabled the running $UNIT"
	[[ -z $(dkms status -m tb5) ]] || fail "DKMS still has tb5: $(dkms status -m tb5)"
	[[ ! -e /var/lib/dkms/tb5 ]] || fail "/var/lib/dkms/tb5 is still there"
	[[ -z $(find "/lib/modules/$KVER" -name 'tb5.ko*') ]] || fail "tb5.ko is still in /lib/modules/$KVER"
	! modprobe -n tb5 2>/dev/null || fail "modprobe still finds tb5"
	[[ -z $(find /usr/src -maxdepth 1 -name 'tb5-*') ]] || fail "/usr/src/tb5-* is still there"
	[[ ! -e $RULE ]] || fail "$RULE is still there"
	! getent group tb5 >/dev/null || fail "the group tb5 is still there"
	[[ ! -e $CONF ]] || fail "$CONF is still there"
	grep -qx 'options tb5 ring_size=2048' "$CONF.rpmsave" ||
		fail "the edited conffile was not kept as $CONF.rpmsave"
	echo "PASS rpm -e: no rpm, no DKMS entry, no module, no /usr/src/tb5-*, no udev rule, no group; $CONF.rpmsave kept (edited)"
}

main() {
	if [[ ${1:-} == installed ]]; then
		installed "$2" "$3"
		exit 0
	fi
	echo "TB5-VM-START: kernel $KVER, $(nproc) CPUs"
	say "$(rpm --version), dkms $(dkms --version | awk '{print $NF}'), udev $(udevadm --version)"
	timed step_install
	timed step_upgrade_2
	timed step_upgrade_3
	timed step_erase
	finish 0
}

main "$@"
