# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# ci/vm/boot-lib.sh - one way to boot a test VM under QEMU, shared by
# ci/vm/run.sh (the initramfs VMs of ci/kernel-tests.sh) and
# ci/package-install.sh (the installed Debian 12). Sourced, never run.
#
# A boot is judged in two steps:
#
#   1. Did the guest reach its test? The guest prints the start marker
#      (TB5_VM_START_MARKER) right before it starts the test: ci/vm/init.sh
#      and ci/vm/install-guest.sh do. A boot that does not print it is a
#      boot failure of one of three kinds, and is retried (at most
#      TB5_VM_BOOT_RETRIES times, default 2), each retry printed with its
#      reason:
#        boot-panic  the guest stopped before the marker: a panic or oops
#                    (panic=-1 and -no-reboot end QEMU at once), or a reset
#        boot-hang   no marker within the boot watchdog's time
#                    (TB5_VM_BOOT_TIMEOUT seconds, default 120); QEMU is
#                    killed then
#        qemu-error  QEMU itself failed: it exited non-zero without a
#                    guest panic (bad arguments, a crash, a signal)
#      and a fourth, for a guest that got to its test, but not cleanly:
#        boot-warning the kernel complained (a line matching
#                    TB5_VM_BAD_PATTERNS) before the start marker, when
#                    nothing of the test - tb5.ko included - had run yet
#   2. The test: the end marker TB5_VM_END_MARKER with status 0, and no
#      console line matching TB5_VM_BAD_PATTERNS. A failed test is never
#      retried, and neither is a test that ran past TB5_VM_TIMEOUT.
#
# The exit statuses of ci/vm/run.sh follow TB5_VM_RC_*.

# Printed by the guest when it starts the test, and at its end.
TB5_VM_START_MARKER='TB5-VM-START:'
TB5_VM_END_MARKER='TB5-VM-RESULT: rc='
# What a console line must never contain. Beyond the usual reports: a task
# blocked in the kernel for 2 minutes (a deadlock; hung_task_panic=1 ends the
# run there), UBSAN's reports, and a panic.
TB5_VM_BAD_PATTERNS=('BUG:' 'WARNING:' 'Oops' 'KASAN' 'refcount_t'
	'list_add corruption' 'sleeping function called'
	'blocked for more than' 'UBSAN:' 'Kernel panic')
# A guest that died before its test says one of these (the first one found
# is the reason printed).
TB5_VM_PANIC_PATTERNS=('Oops' 'BUG:' 'general protection fault' 'double fault'
	'invalid opcode' 'Kernel panic')

# Exit statuses (ci/vm/run.sh, tb5_vm_verdict). 3 and above: the guest never
# reached its test (cleanly), even after the retries.
# shellcheck disable=SC2034  # used by the scripts that source this
TB5_VM_RC_PASS=0 TB5_VM_RC_TEST=1 TB5_VM_RC_HARNESS=2
TB5_VM_RC_PANIC=3 TB5_VM_RC_HANG=4 TB5_VM_RC_QEMU=5 TB5_VM_RC_WARN=6

# tb5_vm_qemu: sets VM_QEMU to the QEMU command both VMs start with (the
# caller adds the kernel, initrd, disks and -append), and VM_APPEND to the
# kernel parameters both pass. TCG only: nested KVM hangs on these
# machines. Knobs: TB5_VM_CPU (max), TB5_VM_TCG_THREAD (single),
# TB5_VM_CLOCK (tsc=reliable), TB5_VM_MEM (MiB, 2048), TB5_VM_SMP (2).
#
# Two defaults keep the boot from failing for no fault of ours (measured
# with ci/vm/soak.sh; ci/README.md has the figures):
#   thread=single  both vCPUs run on one QEMU thread. With one thread per
#                  vCPU (MTTCG), a vCPU may translate and keep code that
#                  another is patching at that moment: the kernel's text
#                  patching (static keys: int3 first, then the new bytes)
#                  then leaves a stale int3 behind, and the next interrupt
#                  on that vCPU dies of "Oops: int3" (seen in
#                  sched_clock_cpu, from the timer interrupt, when
#                  sched_clock is marked stable at 1.5-3 s).
#   tsc=reliable   TCG's TSC is the host's: constant and the same on every
#                  vCPU. Without it, the clocksource watchdog compares it
#                  with the HPET on a loaded host, finds a skew that is only
#                  the host's scheduling, marks it unstable and flips
#                  sched_clock's static key back, at boot or in the middle
#                  of a test; seen racing with the key's enabling:
#                  "WARNING: kernel/jump_label.c:234".
tb5_vm_qemu() {
	# shellcheck disable=SC2034  # read by the callers
	VM_QEMU=(qemu-system-x86_64 -accel "tcg,thread=${TB5_VM_TCG_THREAD:-single}"
		-cpu "${TB5_VM_CPU:-max}"
		-m "${TB5_VM_MEM:-2048}" -smp "${TB5_VM_SMP:-2}"
		-nographic -no-reboot -net none)
	# panic=-1 + -no-reboot: a panic ends QEMU at once instead of
	# hanging until the timeout; oops=panic makes an oops panic.
	# shellcheck disable=SC2034  # read by the callers
	VM_APPEND="console=ttyS0 panic=-1 oops=panic random.trust_cpu=on ${TB5_VM_CLOCK-tsc=reliable}"
}

# The console lines shown on stdout while the VM runs (the log keeps all):
# a command reading the console on stdin. Callers may replace it.
TB5_VM_SHOW=(cat)

# State of the last boot, for the callers:
VM_KIND=''          # reached | boot-panic | boot-hang | qemu-error | boot-warning
VM_REASON=''        # a line saying why, for the failures
VM_QEMU_RC=0        # QEMU's exit status
VM_TIMED_OUT=0      # 1: the test ran past TB5_VM_TIMEOUT (QEMU was killed)
VM_START_SECS=''    # seconds from QEMU's start to the start marker
VM_BOOTS=0          # boots made by tb5_vm_boot, retries included
VM_RETRY_REASONS=() # one "kind: reason" per retried boot
VM_QPID=''          # QEMU's pid while it runs

# tb5_vm_kill_qemu: stops the running QEMU, if any (also for an EXIT trap).
tb5_vm_kill_qemu() {
	local i

	[[ -n $VM_QPID ]] || return 0
	kill -TERM "$VM_QPID" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$VM_QPID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$VM_QPID" 2>/dev/null || true
}

# tb5_vm_last_line LOG: the last console line of the kernel (or, before
# the kernel prints anything, of QEMU or the firmware), without control
# characters, for a reason.
tb5_vm_last_line() {
	local line

	line=$(grep -a '^\[ *[0-9]*\.[0-9]*\]' "$1" | tail -n1 || true)
	[[ -n $line ]] || line=$(grep -a -v '^[[:space:]]*$' "$1" | tail -n1 || true)
	printf '%s\n' "$line" | tr -d '\000-\037\177' | cut -c1-160
}

# tb5_vm_boot_once LOG QEMU-COMMAND...: one boot. The console goes to LOG
# (carriage returns removed, written as it comes: it can be followed) and
# through TB5_VM_SHOW to stdout. A watchdog kills QEMU when the start marker
# has not appeared TB5_VM_BOOT_TIMEOUT seconds after the start, or when the
# whole run takes longer than TB5_VM_TIMEOUT. Sets VM_KIND, VM_REASON,
# VM_QEMU_RC, VM_TIMED_OUT.
tb5_vm_boot_once() {
	local log=$1 fifo ppid start=$SECONDS started=0 killed='' pat line bad=()
	local boot_timeout=${TB5_VM_BOOT_TIMEOUT:-120} timeout=${TB5_VM_TIMEOUT:-900}
	shift

	VM_KIND='' VM_REASON='' VM_QEMU_RC=0 VM_TIMED_OUT=0 VM_START_SECS=''
	for pat in "${TB5_VM_BAD_PATTERNS[@]}"; do
		bad+=(-e "$pat")
	done
	fifo=$(mktemp -u "${TMPDIR:-/tmp}/tb5-vm-console.XXXXXX")
	mkfifo "$fifo"
	: >"$log"
	sed -u 's/\r//g' <"$fifo" | tee -a "$log" | "${TB5_VM_SHOW[@]}" &
	ppid=$!
	"$@" </dev/null >"$fifo" 2>&1 &
	VM_QPID=$!
	while kill -0 "$VM_QPID" 2>/dev/null; do
		if ((!started)) && grep -aqF "$TB5_VM_START_MARKER" "$log"; then
			started=1
			VM_START_SECS=$((SECONDS - start))
		fi
		if ((!started && SECONDS - start >= boot_timeout)); then
			killed=boot
			break
		fi
		if ((SECONDS - start >= timeout)); then
			killed='test'
			break
		fi
		sleep 1
	done
	[[ -z $killed ]] || tb5_vm_kill_qemu
	wait "$VM_QPID" || VM_QEMU_RC=$?
	VM_QPID=''
	wait "$ppid" || true
	rm -f "$fifo"

	if grep -aqF "$TB5_VM_START_MARKER" "$log"; then
		VM_KIND=reached
		[[ -n $VM_START_SECS ]] || VM_START_SECS=$((SECONDS - start))
		[[ $killed != test ]] || VM_TIMED_OUT=1
		# A kernel complaint before the marker is the boot's, not the
		# test's: nothing of the test had run.
		line=$(awk -v m="$TB5_VM_START_MARKER" 'index($0, m) { exit } { print }' "$log" |
			grep -a -m1 -F "${bad[@]}" | cut -c1-160 || true)
		if [[ -n $line ]]; then
			VM_KIND=boot-warning
			VM_REASON="the kernel complained before the test: $line"
		fi
		return 0
	fi
	if [[ -n $killed ]]; then
		VM_KIND=boot-hang
		VM_REASON="no start marker after $((SECONDS - start)) s (watchdog ${boot_timeout} s); last line: $(tb5_vm_last_line "$log")"
		return 0
	fi
	for pat in "${TB5_VM_PANIC_PATTERNS[@]}"; do
		line=$(grep -a -m1 -F "$pat" "$log" | cut -c1-160 || true)
		if [[ -n $line ]]; then
			VM_KIND=boot-panic
			VM_REASON="after $((SECONDS - start)) s: $line"
			return 0
		fi
	done
	if ((VM_QEMU_RC != 0)); then
		VM_KIND=qemu-error
		VM_REASON="QEMU exited with status $VM_QEMU_RC after $((SECONDS - start)) s; last line: $(tb5_vm_last_line "$log")"
	else
		VM_KIND=boot-panic
		VM_REASON="the guest stopped after $((SECONDS - start)) s without a panic message (a reset?); last line: $(tb5_vm_last_line "$log")"
	fi
}

# tb5_vm_boot NAME LOG QEMU-COMMAND...: boots until the guest reaches its
# test, at most 1 + TB5_VM_BOOT_RETRIES times. The log of a boot that is
# retried is kept as LOG with -boot<N> before .log. Prints each retry and
# its reason. Sets what tb5_vm_boot_once sets, VM_BOOTS and
# VM_RETRY_REASONS. Returns 0 when the guest reached its test (whatever the
# test did), 1 when no boot did.
tb5_vm_boot() {
	local name=$1 log=$2 retries=${TB5_VM_BOOT_RETRIES:-2} kept
	shift 2

	[[ $retries =~ ^[0-9]+$ ]] || tb5_die "TB5_VM_BOOT_RETRIES must be a number, not '$retries'"
	VM_BOOTS=0
	VM_RETRY_REASONS=()
	rm -f "${log%.log}"-boot[0-9]*.log
	while :; do
		VM_BOOTS=$((VM_BOOTS + 1))
		tb5_vm_boot_once "$log" "$@"
		[[ $VM_KIND == reached ]] && return 0
		echo "vm: $name: boot $VM_BOOTS failed before the test: $VM_KIND: $VM_REASON"
		((VM_BOOTS <= retries)) || return 1
		kept=${log%.log}-boot$VM_BOOTS.log
		mv "$log" "$kept"
		VM_RETRY_REASONS+=("$VM_KIND: $VM_REASON")
		echo "vm: $name: RETRY $VM_BOOTS of $retries ($VM_KIND; that boot's log: $kept)"
	done
}

# tb5_vm_verdict NAME LOG SCRIPT-NAME: judges the last boot and its test,
# prints the offending lines and the verdict line
#   vm: NAME: PASS (...)
#   vm: NAME: FAIL (test failed): <reasons>
#   vm: NAME: FAIL (boot-panic|boot-hang|qemu-error|boot-warning, never
#             reached the test in N boots): <reason>
# and returns its TB5_VM_RC_* status. TB5_VM_TAIL=1 prints the log's last
# 40 lines on a failure whatever happened (they are printed anyway when the
# guest never reached its end).
tb5_vm_verdict() {
	local name=$1 log=$2 script=$3 marker pat bad=() reasons=() badf retried=''

	((${#VM_RETRY_REASONS[@]} == 0)) ||
		retried=", after ${#VM_RETRY_REASONS[@]} boot retr$( ((${#VM_RETRY_REASONS[@]} == 1)) && echo y || echo ies)"
	if [[ $VM_KIND != reached ]]; then
		echo "---- last 40 lines of $log:"
		tail -n 40 "$log"
		echo "vm: $name: FAIL ($VM_KIND, no boot of $VM_BOOTS reached the test$([[ $VM_KIND != boot-warning ]] || echo ' cleanly')): $VM_REASON"
		case $VM_KIND in
		boot-panic) return "$TB5_VM_RC_PANIC" ;;
		boot-hang) return "$TB5_VM_RC_HANG" ;;
		boot-warning) return "$TB5_VM_RC_WARN" ;;
		*) return "$TB5_VM_RC_QEMU" ;;
		esac
	fi
	marker=$(grep -a "^$TB5_VM_END_MARKER" "$log" | tail -n1 || true)
	if [[ -z $marker ]]; then
		if ((VM_TIMED_OUT)); then
			reasons+=("no end marker: timed out after ${TB5_VM_TIMEOUT:-900} s")
		else
			reasons+=("no end marker (QEMU exit $VM_QEMU_RC: panic or crash during the test?)")
		fi
	elif [[ ${marker#"$TB5_VM_END_MARKER"} != 0 ]]; then
		reasons+=("$script exited with ${marker#"$TB5_VM_END_MARKER"}")
	fi
	for pat in "${TB5_VM_BAD_PATTERNS[@]}"; do
		bad+=(-e "$pat")
	done
	badf=$(mktemp)
	if grep -anF "${bad[@]}" "$log" >"$badf"; then
		reasons+=("the log has $(wc -l <"$badf") line(s) matching ${TB5_VM_BAD_PATTERNS[*]}")
	fi
	if ((${#reasons[@]} == 0)); then
		rm -f "$badf"
		echo "vm: $name: PASS ($(tb5_fmt_secs $((SECONDS - ${START:-0}))), test reached after ${VM_START_SECS} s, log $log$retried)"
		return "$TB5_VM_RC_PASS"
	fi
	if [[ -s $badf ]]; then
		echo "---- offending lines of $log:"
		head -n 50 "$badf"
	fi
	rm -f "$badf"
	if [[ ${TB5_VM_TAIL:-0} == 1 || -z $marker ]]; then
		echo "---- last 40 lines of $log:"
		tail -n 40 "$log"
	fi
	local IFS=';'
	echo "vm: $name: FAIL (test failed$retried): ${reasons[*]}" | sed 's/;/; /g'
	return "$TB5_VM_RC_TEST"
}

# tb5_vm_write_status FILE RC: what happened, for ci/kernel-tests.sh and
# ci/vm/soak.sh: the result's kind, the boots made and the retried boots'
# reasons, one per line.
tb5_vm_write_status() {
	local file=$1 rc=$2 kind r

	case $rc in
	0) kind=pass ;;
	1) kind=test-failed ;;
	*) kind=$VM_KIND ;;
	esac
	{
		echo "result=$kind"
		echo "boots=$VM_BOOTS"
		echo "retries=${#VM_RETRY_REASONS[@]}"
		echo "start_secs=$VM_START_SECS"
		for r in "${VM_RETRY_REASONS[@]}"; do
			echo "retry=$r"
		done
	} >"$file"
}
