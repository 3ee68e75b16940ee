#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-man.sh - what keeps the man pages (docs/man/) true:
#
#   check-man.sh render PAGE.gz
#       man renders it without a warning, as lintian runs it (exit 77, a
#       skip, without man)
#   check-man.sh options PROGRAM PAGE.md
#       the page documents exactly the options PROGRAM --help lists, short
#       and long: none missing, none the program does not have
#   check-man.sh module DKMS_DIR DOC.md
#       DOC (docs/kernel-module.md, whose tables tb5(4) is made of) names
#       every module parameter and every sysfs attribute of the module's
#       source
set -euo pipefail

fail() { echo "FAIL: $*"; exit 1; }

case ${1:-} in
render)
	page=${2:?}
	command -v man >/dev/null || { echo "SKIP: no man here"; exit 77; }
	err=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
		man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null) ||
		fail "man -l $page failed: $err"
	[[ -z $err ]] || fail "man -l $page warns: $err"
	echo "ok: $page renders without warnings"
	;;
options)
	prog=${2:?} md=${3:?}
	# The option lines of CLI11's help: indented 2 to 4 (deeper is the
	# text of a description), starting with a dash.
	have=$("$prog" --help | grep -E '^ {2,4}-' | awk '{ print $1 }' | tr ',' '\n' |
		sed 's/=.*//' | grep -E '^--?[A-Za-z]' | sort -u)
	# The page's option terms: lines that start with **-.
	documented=$(grep -E '^\*\*-' "$md" | grep -oE '\*\*--?[A-Za-z][A-Za-z0-9-]*\*\*' |
		tr -d '*' | sort -u)
	missing=$(comm -23 <(echo "$have") <(echo "$documented"))
	extra=$(comm -13 <(echo "$have") <(echo "$documented"))
	[[ -z $missing ]] || fail "$md does not document: ${missing//$'\n'/ }"
	[[ -z $extra ]] || fail "$md documents options $prog does not have: ${extra//$'\n'/ }"
	echo "ok: $md documents the $(echo "$have" | wc -l) options of $(basename "$prog") --help"
	;;
module)
	dkms=${2:?} doc=${3:?}
	params=$(grep -ohE 'module_param(_cb|_named)?\([a-z_0-9]+' "$dkms"/*.c |
		sed 's/.*(//' | sort -u)
	attrs=$(grep -ohE '&(dev|class)_attr_[a-z_0-9]+\.attr' "$dkms"/*.c |
		sed -E 's/&(dev|class)_attr_//; s/\.attr//' | sort -u)
	[[ -n $params && -n $attrs ]] || fail "no parameters or attributes found in $dkms"
	missing=
	for n in $params $attrs; do
		# `name`, or a path ending in it (`/sys/class/tb5/name`)
		grep -qE "\`([^\`]*/)?$n\`" "$doc" || missing="$missing $n"
	done
	[[ -z $missing ]] || fail "$doc does not name:$missing"
	echo "ok: $doc names the $(echo "$params" | wc -w) parameters and $(echo "$attrs" | wc -w) sysfs attributes of $dkms"
	;;
*)
	echo "usage: check-man.sh render PAGE.gz | options PROGRAM PAGE.md | module DKMS_DIR DOC.md" >&2
	exit 2
	;;
esac
