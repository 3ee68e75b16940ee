#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# render.py - one man page from its Markdown source in docs/man/:
#
#   render.py SRC.md OUT.gz --version V --date D [--md OUT.md]
#
# @PROJECT_VERSION@ and @TB5_MAN_DATE@ are replaced; a line
# "<!-- include ../FILE.md#Heading -->" is replaced by that section of the
# document (up to the next heading of its level), so that tb5(4)'s tables
# are docs/kernel-module.md's own and cannot drift from them. Tables
# become definition lists (a man page is 80 columns), links their text.
# go-md2man turns the result into roff; gzip -9n makes it reproducible.
import argparse
import gzip
import os
import re
import subprocess
import sys


def section(path, heading):
    """The lines of @path's section titled @heading, its heading included."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^(#+) (.*)$", line)
        if m and m.group(2).strip() == heading:
            level = len(m.group(1))
            out = [line]
            for rest in lines[i + 1:]:
                r = re.match(r"^(#+) ", rest)
                if r and len(r.group(1)) <= level:
                    break
                out.append(rest)
            return out
    sys.exit(f"render.py: {path} has no section '{heading}'")


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables_to_lists(lines):
    """Markdown tables as definition lists: the first column the term; the
    second the body with two columns; with a last column "meaning", that
    and the others in parentheses ("default 4096"); else "header: value"."""
    out, i = [], 0
    while i < len(lines):
        if (lines[i].lstrip().startswith("|") and i + 1 < len(lines)
                and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1])):
            head = cells(lines[i])
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                row = cells(lines[i])
                term = row[0]
                rest = row[1:]
                if len(rest) == 1:
                    body = rest[0]
                elif head[-1].lower() == "meaning":
                    body = rest[-1] + " (" + "; ".join(
                        f"{h} {v}" for h, v in zip(head[1:-1], rest[:-1])) + ")"
                else:
                    body = "; ".join(f"{h}: {v}" for h, v in zip(head[1:], rest))
                out += [term, ":   " + body, ""]
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return out


def render(src, version, date):
    base = os.path.dirname(os.path.abspath(src))
    with open(src, encoding="utf-8") as f:
        text = f.read()
    text = text.replace("@PROJECT_VERSION@", version).replace("@TB5_MAN_DATE@", date)
    out = []
    for line in text.split("\n"):
        m = re.match(r"^<!-- include (\S+)#(.+) -->$", line.strip())
        if not m:
            out.append(line)
            continue
        part = section(os.path.join(base, m.group(1)), m.group(2).strip())
        # The section's heading becomes the page's (upper case, level 1);
        # its sub-headings one level up.
        level = len(re.match(r"^(#+)", part[0]).group(1))
        out.append("# " + m.group(2).strip().upper())
        for p in part[1:]:
            h = re.match(r"^(#+) (.*)$", p)
            out.append("#" * max(2, len(h.group(1)) - level + 1) + " " + h.group(2)
                       if h else p)
    out = tables_to_lists(out)
    md = "\n".join(out)
    md = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", md)	# links: their text
    return md


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--version", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--md", help="also write the expanded Markdown here")
    a = ap.parse_args()
    md = render(a.src, a.version, a.date)
    if a.md:
        with open(a.md, "w", encoding="utf-8") as f:
            f.write(md)
    roff = subprocess.run(["go-md2man"], input=md.encode(), capture_output=True, check=True).stdout
    with open(a.out, "wb") as f:
        # mtime 0 and no name: the same bytes every build (gzip -9n).
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as g:
            g.write(roff)


if __name__ == "__main__":
    main()
