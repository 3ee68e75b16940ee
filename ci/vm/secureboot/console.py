#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# ci/vm/secureboot/console.py - one boot of ci/secureboot.sh's VM: runs QEMU
# with its serial console on this program's pipes, writes the console to a
# log (escape sequences and carriage returns removed, line by line as it
# comes), shows the lines that match --show, and answers the firmware's
# screens where told to: each --expect TEXT --send KEYS pair waits for TEXT
# on the console (after the previous pair's) and then types KEYS, which is
# how shim's MOK manager is driven (Enroll MOK, Continue, Yes, the
# password, Reboot), as an operator at the serial console would.
#
#   console.py --log LOG --timeout SECS [--boot-timeout SECS --start TEXT]
#              [--show REGEX] [--forbid TEXT]... [--expect TEXT --send KEYS]...
#              -- QEMU-COMMAND...
#
# KEYS may hold {down}, {up} and {enter}, the keys of a VT100 terminal.
# Hard limits: QEMU is killed after --timeout seconds, and after
# --boot-timeout seconds when --start TEXT has not appeared by then.
# Exit status: QEMU's, or 124 when it was killed on a limit, 3 when it
# ended before every --expect was seen, 4 when a --forbid TEXT appeared; on
# any of these the log's last 40 lines are printed.
import argparse
import os
import re
import select
import subprocess
import sys
import time

ANSI = re.compile(rb'\x1b(\[[0-9;?=]*[A-Za-z]|[()][A-Za-z0-9]|[A-Za-z=>])')
KEYS = {'{down}': '\x1b[B', '{up}': '\x1b[A', '{enter}': '\r'}


def clean(raw):
    """The console's bytes as text: no escape sequences, no NULs, no CRs."""
    text = ANSI.sub(b'', raw).replace(b'\r', b'').replace(b'\0', b'')
    # The firmware draws its boxes in a PC code page: dropped.
    return text.decode('utf-8', 'replace').replace('\ufffd', '')


def keys(spec):
    for name, seq in KEYS.items():
        spec = spec.replace(name, seq)
    return spec.encode()


def tail(path, n=40):
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = f.read().splitlines()
    print(f'---- last {n} lines of {path}:')
    for line in lines[-n:]:
        print(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--log', required=True)
    ap.add_argument('--timeout', type=float, required=True)
    ap.add_argument('--boot-timeout', type=float, default=0)
    ap.add_argument('--start', default='')
    ap.add_argument('--show', default='')
    ap.add_argument('--forbid', action='append', default=[])
    ap.add_argument('--expect', action='append', default=[])
    ap.add_argument('--send', action='append', default=[])
    ap.add_argument('qemu', nargs=argparse.REMAINDER)
    args = ap.parse_args()
    qemu = args.qemu[1:] if args.qemu[:1] == ['--'] else args.qemu
    if not qemu or len(args.expect) != len(args.send):
        ap.error('a QEMU command after --, and one --send per --expect')
    show = re.compile(args.show) if args.show else None
    steps = list(zip(args.expect, args.send))

    start = time.monotonic()
    proc = subprocess.Popen(qemu, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    log = open(args.log, 'w', encoding='utf-8')
    screen = ''     # what the console showed since the last --expect matched
    partial = b''   # the console's current line, not yet complete
    started = not args.start
    killed = ''
    forbidden = ''
    fd = proc.stdout.fileno()
    while True:
        now = time.monotonic() - start
        if now >= args.timeout:
            killed = f'the boot ran past its limit of {args.timeout:.0f} s'
        elif not started and args.boot_timeout and now >= args.boot_timeout:
            killed = f'no "{args.start}" within {args.boot_timeout:.0f} s'
        if killed:
            proc.kill()
            break
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        partial += chunk
        *lines, partial = partial.split(b'\n')
        text = ''.join(clean(line) + '\n' for line in lines)
        # A menu or prompt waits on a line not yet ended.
        screen += text + clean(partial)
        if lines:
            log.write(text)
            log.flush()
            for line in text.splitlines():
                if show and show.search(line):
                    print(line, flush=True)
        if not started and args.start in screen:
            started = True
        for bad in args.forbid:
            if bad in screen and not forbidden:
                forbidden = bad
        if forbidden:
            proc.kill()
            break
        if steps and steps[0][0] in screen:
            expect, send = steps.pop(0)
            print(f'console: saw "{expect}" after {now:.0f} s: typing {send}', flush=True)
            screen = ''
            time.sleep(0.5)
            proc.stdin.write(keys(send))
            proc.stdin.flush()
        elif lines:
            # Keep only the tail: the prompts are on the last lines.
            screen = screen[-4096:]
    rc = proc.wait()
    if partial:
        log.write(clean(partial) + '\n')
    log.close()
    secs = time.monotonic() - start
    if killed:
        print(f'console: {killed}; QEMU killed after {secs:.0f} s')
        tail(args.log)
        return 124
    if forbidden:
        print(f'console: "{forbidden}" appeared, which this boot must not show; QEMU killed after {secs:.0f} s')
        tail(args.log)
        return 4
    if steps:
        print(f'console: QEMU ended (status {rc}) after {secs:.0f} s before "{steps[0][0]}" appeared')
        tail(args.log)
        return 3
    print(f'console: QEMU ended with status {rc} after {secs:.0f} s')
    if rc:
        tail(args.log)
    return rc


if __name__ == '__main__':
    sys.exit(main())
