#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Side-by-side markdown table of nccl_check --bench JSON lines.

    bench_table.py --col LABEL=TITLE [--col ...] [--ratio A/B ...] FILE...

One table per collective: a row per size, a column per transport label
(bus bandwidth and median time per op), then the ratios of bus bandwidth
asked for with --ratio (labels A and B). Standard library only.
"""

import argparse
import json
import sys


def human_size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def human_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} us"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--col", action="append", default=[], help="LABEL=TITLE, in column order")
    ap.add_argument("--ratio", action="append", default=[], help="A/B: busbw of label A over label B")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    cols = []
    for c in args.col:
        label, _, title = c.partition("=")
        cols.append((label, title or label))
    titles = dict(cols)

    # (coll, bytes) -> label -> record; the last record of a label wins.
    data = {}
    nranks = {}
    for path in args.files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                data.setdefault((r["coll"], r["bytes"]), {})[r["label"]] = r
                nranks.setdefault(r["coll"], set()).add(r.get("nranks"))
    if not cols:
        labels = sorted({lab for recs in data.values() for lab in recs})
        cols = [(lab, lab) for lab in labels]
        titles = dict(cols)

    ratios = []
    for spec in args.ratio:
        a, _, b = spec.partition("/")
        ratios.append((a, b))

    out = sys.stdout
    for coll in sorted({k[0] for k in data}):
        n = ",".join(str(x) for x in sorted(nranks[coll], key=str))
        out.write(f"\n{coll}, {n} ranks: bus bandwidth in GB/s (median time per op)\n\n")
        head = ["size"] + [titles[lab] for lab, _ in cols]
        head += [f"{titles.get(a, a)} / {titles.get(b, b)}" for a, b in ratios]
        out.write("| " + " | ".join(head) + " |\n")
        out.write("|" + "|".join([" ---: "] * len(head)) + "|\n")
        for size in sorted(b for c, b in data if c == coll):
            recs = data[(coll, size)]
            row = [human_size(size)]
            for lab, _ in cols:
                r = recs.get(lab)
                if r is None:
                    row.append("-")
                    continue
                cell = f"{r['busbw_gbps']:.2f} ({human_time(r['time_us'])})"
                if r.get("verified") is False:
                    cell += " FAIL"
                row.append(cell)
            for a, b in ratios:
                ra, rb = recs.get(a), recs.get(b)
                if ra and rb and rb["busbw_gbps"] > 0:
                    row.append(f"{ra['busbw_gbps'] / rb['busbw_gbps']:.2f}")
                else:
                    row.append("-")
            out.write("| " + " | ".join(row) + " |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
