#!/bin/sh
# SPDX-License-Identifier: MIT
#
# packaging/debian/dh-exporter-scripts.sh OUT-DIR UNIT-FILE - tb5-exporter's
# maintainer scripts for CPack's deb, written by debhelper itself: in a
# scratch source tree that has only tb5-exporter and its unit,
# dh_installsystemd writes its snippets (enable on install, start or
# restart where systemd runs, stop on remove, forget on purge) and
# dh_installdeb assembles them into postinst, prerm and postrm, which land
# in OUT-DIR. The Debian source package (packaging/debian-src) runs the same
# dh_installsystemd, with the same (default) options, in its own build: the
# logic has one source, debhelper, and ci/deb-compare.sh checks that the two
# builds' scripts are the same.
set -eu

[ $# -eq 2 ] || { echo "usage: $0 OUT-DIR UNIT-FILE" >&2; exit 2; }
out=$1
unit=$2
[ -f "$unit" ] || { echo "$0: no unit file $unit" >&2; exit 1; }
for t in dh_installsystemd dh_installdeb; do
	command -v "$t" >/dev/null ||
		{ echo "$0: $t not found: CPack's tb5-exporter deb takes its maintainer scripts from debhelper (apt install debhelper)" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/debian"
cat >"$tmp/debian/control" <<'CONTROL'
Source: tb5
Maintainer: The tb5 authors <tb5@tb5.invalid>
Build-Depends: debhelper-compat (= 13)

Package: tb5-exporter
Architecture: any
Description: tb5 metrics exporter for Prometheus
 Scratch package: only its maintainer scripts are used.
CONTROL
cp "$unit" "$tmp/debian/tb5-exporter.service"
# dh_installdeb gives the files to root, as in any package build: a user
# who is not root runs it under fakeroot, as dpkg-buildpackage does.
as_root=
if [ "$(id -u)" -ne 0 ]; then
	command -v fakeroot >/dev/null ||
		{ echo "$0: fakeroot not found: dh_installdeb needs it when not run as root (apt install fakeroot)" >&2; exit 1; }
	as_root=fakeroot
fi
# Run inside a debhelper build (the source package's dh_auto_configure),
# dh's options for that build must not reach the scratch one.
(cd "$tmp" && env -u DH_INTERNAL_OPTIONS -u DH_OPTIONS dh_installsystemd -ptb5-exporter &&
	env -u DH_INTERNAL_OPTIONS -u DH_OPTIONS $as_root dh_installdeb -ptb5-exporter)
mkdir -p "$out"
for s in postinst prerm postrm; do
	[ -f "$tmp/debian/tb5-exporter/DEBIAN/$s" ] ||
		{ echo "$0: debhelper wrote no $s for tb5-exporter" >&2; exit 1; }
	install -m 0755 "$tmp/debian/tb5-exporter/DEBIAN/$s" "$out/$s"
done
