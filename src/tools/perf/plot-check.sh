#!/bin/sh
# SPDX-License-Identifier: MIT
#
# plot-check.sh TB5_PERF CASE - tb5-perf --plot end to end, for ctest:
#   svg      a short sweep over the simulator's loop pair drawn as SVG: the
#            file parses as XML (xmllint, else python3) and its root is <svg>
#   png      the same as PNG: the 8-byte signature, then an IHDR chunk with
#            a width and a height
#   missing  TB5_GNUPLOT=/nonexistent: exit 1 before the run, with the
#            message that says so
#   fails    gnuplot that fails (TB5_GNUPLOT=false): exit 1 after the run,
#            the JSON of -o written all the same
# Exit 77 (ctest: skipped) for svg and png when gnuplot, or an XML checker
# for svg, is not installed.
set -u

perf=$1
case=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/tb5-perf-plot.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
sweep="--sim --loop --test bw,lat --sizes 256:16K --duration 0.02 --no-memcpy -q"

fail() {
	echo "plot-check $case: $*" >&2
	exit 1
}

# Runs tb5-perf with "$@", its stderr kept in $dir/err; sets $status.
run() {
	"$perf" "$@" 2>"$dir/err"
	status=$?
	cat "$dir/err" >&2
}

need_gnuplot() {
	command -v gnuplot >/dev/null 2>&1 || {
		echo "plot-check $case: skipped: no gnuplot (apt install gnuplot-nox)"
		exit 77
	}
}

case $case in
svg)
	need_gnuplot
	# shellcheck disable=SC2086  # $sweep is a list of options
	run $sweep --plot "$dir/out.svg"
	[ "$status" -eq 0 ] || fail "exit status $status, wanted 0"
	[ -s "$dir/out.svg" ] || fail "no out.svg"
	if command -v xmllint >/dev/null 2>&1; then
		xmllint --noout "$dir/out.svg" || fail "out.svg is not XML"
		root=$(xmllint --xpath 'local-name(/*)' "$dir/out.svg") ||
			fail "out.svg: no root element"
	elif command -v python3 >/dev/null 2>&1; then
		root=$(python3 -c 'import sys, xml.dom.minidom as m
print(m.parse(sys.argv[1]).documentElement.localName)' "$dir/out.svg") ||
			fail "out.svg is not XML"
	else
		echo "plot-check $case: skipped: no xmllint or python3 to check the XML"
		exit 77
	fi
	[ "$root" = svg ] || fail "out.svg: root element <$root>, wanted <svg>"
	echo "plot-check svg: $(wc -c <"$dir/out.svg") bytes of XML, root <svg>"
	;;
png)
	need_gnuplot
	# shellcheck disable=SC2086
	run $sweep --plot "$dir/out.png"
	[ "$status" -eq 0 ] || fail "exit status $status, wanted 0"
	# Signature, IHDR's length (13) and type, width, height.
	head=$(od -An -tx1 -N24 "$dir/out.png" | tr -d ' \n')
	case $head in
	89504e470d0a1a0a0000000d49484452*) ;;
	*) fail "out.png: not a PNG (starts with $head)" ;;
	esac
	width=$(printf '%d' "0x$(echo "$head" | cut -c33-40)")
	height=$(printf '%d' "0x$(echo "$head" | cut -c41-48)")
	if [ "$width" -eq 0 ] || [ "$height" -eq 0 ]; then
		fail "out.png: IHDR says ${width}x$height"
	fi
	echo "plot-check png: a PNG of ${width}x$height"
	;;
missing)
	# shellcheck disable=SC2086
	TB5_GNUPLOT=/nonexistent run $sweep --plot "$dir/out.svg"
	[ "$status" -eq 1 ] || fail "exit status $status, wanted 1"
	grep -q -- "--plot needs gnuplot" "$dir/err" ||
		fail "no \"--plot needs gnuplot\" on stderr"
	[ ! -e "$dir/out.svg" ] || fail "out.svg written without gnuplot"
	echo "plot-check missing: exit 1: $(cat "$dir/err")"
	;;
fails)
	false=$(command -v false) || fail "no false(1)"
	# shellcheck disable=SC2086
	TB5_GNUPLOT=$false run $sweep --json -o "$dir/out.json" \
		--plot "$dir/out.svg"
	[ "$status" -eq 1 ] || fail "exit status $status, wanted 1"
	grep -q "failed (exit status 1" "$dir/err" ||
		fail "no \"failed (exit status 1\" on stderr"
	grep -q '"rows"' "$dir/out.json" 2>/dev/null ||
		fail "the results were not written to -o"
	echo "plot-check fails: exit 1, the JSON written"
	;;
*)
	fail "unknown case"
	;;
esac
