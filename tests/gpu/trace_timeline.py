#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# trace_timeline.py - merges the plugin's data-path traces
# (TB5_NCCL_TRACE=<prefix>: one <prefix>.<pid> file per process, one clock,
# CLOCK_MONOTONIC) into one timeline, and sums up where an operation's time
# went. Standard library only.
#
#   trace_timeline.py [--skip N] [--window US] [--events N] FILE...
#
# Prints, per process (A, B, ...), the gaps that matter: how long each
# isend/irecv call took (to the next event of that process), how long a
# send took from isend to its completion being reaped, and how long a
# posted receive waited for its data; then, from the N-th isend of the
# first process on, WINDOW microseconds of both processes' events side by
# side.
import argparse
import collections
import statistics
import sys


def load(paths):
    ev = []
    for i, path in enumerate(paths):
        with open(path) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                t, kind, comm, req, nbytes = line.split()
                ev.append((int(t), i, kind, comm, req, int(nbytes)))
    ev.sort()
    return ev


def q(xs):
    if not xs:
        return "-"
    xs = sorted(xs)
    p = lambda f: xs[min(len(xs) - 1, int(f * len(xs)))]
    return "p10 %.1f  p50 %.1f  p90 %.1f  (%d)" % (p(.1), p(.5), p(.9), len(xs))


def main():
    ap = argparse.ArgumentParser(description="merge TB5_NCCL_TRACE files into one timeline")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--skip", type=int, default=-1,
                    help="start the window at this isend of the first process "
                         "(default: the middle one)")
    ap.add_argument("--window", type=float, default=300.0, help="microseconds shown")
    ap.add_argument("--events", type=int, default=120, help="at most this many lines")
    a = ap.parse_args()
    ev = load(a.files)
    if not ev:
        sys.exit("no events")
    names = "ABCDEFGH"
    for p in range(len(a.files)):
        mine = [e for e in ev if e[1] == p]
        call, send, recv = [], [], []
        posted = {}
        for j, e in enumerate(mine):
            t, _, kind, comm, req, n = e
            if kind in "SR" and j + 1 < len(mine):
                call.append((mine[j + 1][0] - t) / 1e3)
            if kind in "SR":
                posted[req] = (t, kind)
            elif kind in "sr" and req in posted:
                t0, k0 = posted.pop(req)
                (send if k0 == "S" else recv).append((t - t0) / 1e3)
        sizes = collections.Counter(e[5] for e in mine if e[2] == "S")
        print("%s (%s): %d events; isend sizes %s" % (
            names[p], a.files[p], len(mine), dict(sizes.most_common(4))))
        print("   isend/irecv call + what follows it, us: %s" % q(call))
        print("   isend -> send completion reaped, us:   %s" % q(send))
        print("   irecv -> receive completion reaped, us: %s" % q(recv))
    starts = [e for e in ev if e[1] == 0 and e[2] == "S"]
    if not starts:
        return
    s0 = starts[a.skip if 0 <= a.skip < len(starts) else len(starts) // 2][0]
    comms = {}
    shown = 0
    print("\n   t(us)  " + "  ".join("%-26s" % names[p] for p in range(len(a.files))))
    for t, p, kind, comm, req, n in ev:
        if t < s0:
            continue
        if (t - s0) / 1e3 > a.window or shown >= a.events:
            break
        c = comms.setdefault((p, comm), len(comms))
        cell = "%s c%-2d %-10s %8d" % (kind, c, req[-6:], n)
        print("%8.1f  %s%s" % ((t - s0) / 1e3, " " * 28 * p, cell))
        shown += 1


if __name__ == "__main__":
    main()
