#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/fuzz/run.sh <build-dir> [seconds] [rx|tb] - run one fuzzer for a
# bounded time (default 60 s), starting from its seed corpus: rx (the
# default) is tb5-fuzz-rx, the core's receive path, from tests/fuzz/corpus;
# tb is tb5-fuzz-tb, what the wire reaches in the tb backend, from
# tests/fuzz/corpus-tb.
#
# The fuzzer works on a copy of its corpus in a temporary directory, so the
# tree is never modified; a crash, leak or timeout input is kept in
# <build-dir>/fuzz-findings/ and the script exits non-zero. The last lines
# of output are libFuzzer's final stats (executions, coverage, corpus).
#
# TB5_FUZZ_JOBS runs that many fuzzer processes in parallel (default 1).
set -euo pipefail

usage() {
	echo "usage: $0 <build-dir> [seconds] [rx|tb]" >&2
	exit 2
}

[[ $# -ge 1 && $# -le 3 ]] || usage
build=$(cd "$1" && pwd) || usage
seconds=${2:-60}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || usage
jobs=${TB5_FUZZ_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || usage
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case ${3:-rx} in
rx) name=tb5-fuzz-rx corpus=$here/corpus ;;
tb) name=tb5-fuzz-tb corpus=$here/corpus-tb ;;
*) usage ;;
esac

fuzzer=$build/tests/fuzz/$name
if [[ ! -x $fuzzer ]]; then
	echo "$0: $fuzzer not built (configure with -DTB5_BUILD_FUZZERS=ON" \
		"and clang)" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tb5-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$build/fuzz-findings"
cp "$corpus"/* "$work/corpus/"
log=$work/fuzz.log

echo "$name: ${seconds} s, $(ls "$work/corpus" | wc -l) seeds," \
	"findings go to $build/fuzz-findings/"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
	-max_len=8192 -print_final_stats=1
	-artifact_prefix="$build/fuzz-findings/")
if ((jobs > 1)); then
	args+=(-fork="$jobs" -ignore_crashes=0)
fi
"$fuzzer" "${args[@]}" "$work/corpus" >"$log" 2>&1 || status=$?

# The progress lines are many; the last ones and the final stats say it all.
grep -E '^#[0-9]+[[:space:]]+INITED' "$log" || true
grep -E '^#[0-9]+[[:space:]]+(DONE|pulse)' "$log" | tail -n 3 || true
grep -E '^(stat::|Done )' "$log" || true
if ((status != 0)); then
	echo "$name: FAILED (exit status $status); the report:" >&2
	grep -vE '^#[0-9]+[[:space:]]' "$log" | tail -n 80 >&2
	ls -l "$build/fuzz-findings/" >&2
	exit 1
fi
echo "$name: no crash in ${seconds} s"
