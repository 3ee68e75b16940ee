#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ci/host-tools-audit.py - every program the README's commands run on the
host must come from a package that the scripts install.

A fresh Debian 12 machine has only the essential and required packages (what
`debootstrap --variant=minbase` lays down). Everything else a script calls
must come from a deps list of ci/lib.sh (TB5_DEPS_*) that is installed on
the way from one of the README's commands (ci/main.sh, ci/test.sh) to that
script. Otherwise the command works on a machine an earlier run provisioned
and fails on a new one (issue 24: `modinfo`, from kmod, in
ci/package-install.sh under ci/main.sh).

How it works:
  1. Each shell script of the tree is parsed with shfmt (its JSON syntax
     tree), so that here-documents, command substitutions, `case` arms and
     quoting are read as bash reads them. The first word of every simple
     command, and the command behind wrappers such as sudo, env, timeout,
     xargs, is a command the script runs.
  2. What is not a program is dropped: shell builtins and keywords, the
     functions the scripts define, words built at run time ("$cc", "$@"),
     and paths inside the tree.
  3. Commands that run somewhere else are dropped by file, with the reason
     (GUEST_FILES, below), and behind `chroot DIR` on a command line.
  4. Each entry point reaches the scripts it names (ci/x.sh, bash FILE,
     source FILE) and those the build and ctest run (named in a CMake file); the deps lists it installs
     are the TB5_DEPS_* arrays that those scripts pass to tb5_install_deps.
  5. ci/host-tools.tsv maps each command to its Debian package. A command
     missing from the map fails the audit (say which package brings it); a
     command whose package is neither essential/required nor installed on
     the way there fails it too, with the command, the script and the line.
  6. Where a command is installed here, `dpkg -S` must agree with the map,
     so that the map cannot drift from what Debian ships.

Usage: ci/host-tools-audit.py [--root DIR] [-v]
Exit status: 0 when every command is accounted for, 1 otherwise.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# The README's commands: what a new user types. Each must bring every tool
# that the scripts it reaches run on the host.
ENTRIES = ["ci/main.sh", "ci/test.sh"]

# Scripts that never run on the CI host, and why. Their commands come from
# the system they run in, whose package list must bring them instead.
GUEST_FILES = {
    # The test VMs' busybox initramfs and the booted Debian systems
    # (ci/vm/run.sh copies busybox and the kernel's modules in; the
    # installed systems' package lists are BASE_PKGS in ci/package-install.sh
    # and the rpm guest's in ci/rpm-install.sh).
    "ci/vm/init.sh": "runs as /init in the test VM",
    "ci/vm/demo.sh": "runs in the test VM (busybox)",
    "ci/vm/guest-lib.sh": "sourced by the booted systems' tests",
    "ci/vm/install-guest.sh": "runs in the booted Debian 12 of package-install.sh",
    "ci/vm/rpm-guest.sh": "runs in the booted Debian 12 of rpm-install.sh",
    "ci/vm/secureboot/guest.sh": "runs in the Secure Boot Debian 12 of secureboot.sh",
    "ci/vm/smoke/vm-tests.sh": "runs in the test VM",
    "ci/vm/soak/vm-tests.sh": "runs in the test VM",
    "tests/kernel/vm-tests.sh": "runs in the test VM",
    "tests/kernel/vm-tests-fabric.sh": "runs in the fabric's VMs",
    "tests/kernel/vm-tests-lib.sh": "runs in the test VM and the fabric's VMs",
    "tests/kernel/vm-tests-plugin.sh": "runs in the test VM",
    "tests/kernel/vm-tests-tb.sh": "runs in the test VM",
    "tests/kernel/vm-tests-tools.sh": "runs in the test VM",
    # autopkgtest runs debian/tests in its testbed, whose Depends bring
    # the tools.
    "packaging/debian-src/debian/tests/module-selftest": "runs in the autopkgtest testbed",
    # Maintainer scripts run on the system the package is installed on;
    # the package's Depends bring their tools.
    "packaging/debian/postinst.in": "maintainer script (the package's Depends)",
    "packaging/debian/prerm.in": "maintainer script (the package's Depends)",
    "packaging/debian/postrm.in": "maintainer script (the package's Depends)",
    # The opt-in GPU tests run on the GPU machine, never in CI
    # (tests/gpu/README.md); test-scripts.sh is their CPU check and runs
    # under ctest on the host.
    "tests/gpu/build.sh": "runs on the GPU machine",
    "tests/gpu/lib.sh": "sourced on the GPU machine",
    "tests/gpu/run-benchmark.sh": "runs on the GPU machine",
    "tests/gpu/run-validation.sh": "runs on the GPU machine",
}
# Files matched by pattern (new GPU session scripts and the like).
GUEST_PATTERNS = [
    (re.compile(r"^tests/gpu/run-[\w-]+\.sh$"), "runs on the GPU machine"),
]

# What a new user has beyond the essential and required packages: the
# checkout was cloned with git, and a user who is not root runs the scripts
# through sudo (they look for it before they use it). The fresh-system run
# (ci/fresh-system.sh) gives its Debian 12 exactly these two.
NEW_USER_PACKAGES = {"git", "sudo"}

# Bash's builtins and keywords: not programs.
BUILTINS = set("""
    . : [ alias bg bind break builtin caller cd command compgen complete
    compopt continue declare dirs disown echo enable eval exec exit export
    false fc fg getopts hash help history jobs kill let local logout mapfile
    popd printf pushd pwd read readarray readonly return set shift shopt
    source suspend test times trap true type typeset ulimit umask unalias
    unset wait
""".split())

# Commands that run another command: how many words they take before it.
# A value is a set of options that take an argument; `None` where a fixed
# count of words follows (timeout DURATION).
WRAPPERS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "env": {"-u", "-C", "-S", "--unset", "--chdir"},
    "exec": {"-a"},
    "command": set(),
    "nice": {"-n", "--adjustment"},
    "nohup": set(),
    "setsid": set(),
    "stdbuf": {"-i", "-o", "-e"},
    "xargs": {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s",
              "--arg-file", "--delimiter", "--max-args", "--max-procs"},
    "unshare": {"--propagation", "-S", "-G", "--setuid", "--setgid",
                "--wd", "-w", "--root", "-R"},
    "flock": {"-w", "--timeout", "-E", "--conflict-exit-code"},
    "time": set(),
    "ionice": {"-c", "-n", "-p"},
    "fakeroot": set(),
}
# Wrappers with a fixed number of plain words before the command.
WRAPPER_ARGS = {"timeout": 1, "flock": 1}
# The scripts' own functions that run "$@" after N words of their own.
FUNCTION_RUNNERS = {
    "tb5_stage": 1,       # ci/lib.sh: tb5_stage NAME COMMAND...
    "tb5_timed": 1,       # ci/kernel-lib.sh: tb5_timed NAME COMMAND...
    "tb5_retry": 0,       # ci/kernel-lib.sh: tb5_retry COMMAND...
    "timed": 1,           # ci/kernel-tests.sh: timed NAME COMMAND...
    "with_headers": 2,    # ci/dkms-build.sh: with_headers KVER DIR COMMAND...
    "tb5_vm_boot_once": 1,  # ci/vm/boot-lib.sh: tb5_vm_boot_once LOG COMMAND...
}
# Commands that run the rest of their words in another system (a chroot
# whose package list brings them): chroot DIR, and the scripts' wrappers
# of it.
ELSEWHERE = {"chroot", "tb5_chroot", "in_root", "dnf_in_root", "dnf_from"}


# A script of the tree, as a command or a file that bash runs or sources.
SCRIPT_REF = re.compile(r"(?:^|[/\0])((?:(?:ci|tests|src|packaging|docs)/)?[\w./-]*\.sh)$")


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def is_shell_script(path: Path) -> bool:
    if path.suffix in (".sh", ".bash"):
        return True
    if path.suffix or not path.is_file():
        return path.name.endswith(".in") and _shebang_is_shell(path)
    return _shebang_is_shell(path)


def _shebang_is_shell(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return bool(re.match(rb"#!\s*\S*(/|env\s+)(ba)?sh\b", first))


def word_literal(word):
    """The word's text when it is fixed (no expansion), else None."""
    out = []
    for part in word.get("Parts") or []:
        t = part.get("Type")
        if t == "Lit":
            out.append(part.get("Value", ""))
        elif t == "SglQuoted":
            out.append(part.get("Value", ""))
        elif t == "DblQuoted":
            inner = word_literal({"Parts": part.get("Parts") or []})
            if inner is None:
                return None
            out.append(inner)
        else:
            return None
    return "".join(out)


def word_text(word):
    """The word's literal pieces, expansions left out (for finding paths)."""
    out = []
    for part in word.get("Parts") or []:
        t = part.get("Type")
        if t in ("Lit", "SglQuoted"):
            out.append(part.get("Value", ""))
        elif t == "DblQuoted":
            out.append(word_text({"Parts": part.get("Parts") or []}))
        else:
            out.append("\0")
    return "".join(out)


class Script:
    def __init__(self, rel, root):
        self.rel = rel
        self.commands = []      # (line, name)
        self.functions = set()
        self.refs = set()       # other scripts named in it
        self.lists = set()      # TB5_DEPS_* it installs
        self.inline_installs = []  # (line, packages) given by name
        src = (root / rel).read_text(errors="replace")
        self.src = src
        proc = subprocess.run(["shfmt", "--to-json", "-ln", "bash"], input=src,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{rel}: shfmt cannot parse it: {proc.stderr.strip()}")
        self.tree = json.loads(proc.stdout)
        self._walk(self.tree)

    def _source(self, word):
        return self.src[word["Pos"]["Offset"]:word["End"]["Offset"]]

    def _walk(self, node):
        if isinstance(node, list):
            for n in node:
                self._walk(n)
            return
        if not isinstance(node, dict):
            return
        t = node.get("Type")
        if t == "FuncDecl":
            name = node.get("Name", {}).get("Value")
            if name:
                self.functions.add(name)
        if t == "CallExpr":
            self._call(node.get("Args") or [])
        for key, value in node.items():
            if key in ("Pos", "End"):
                continue
            self._walk(value)

    def _ref(self, word):
        """Notes the tree's script that WORD names, if it names one."""
        m = SCRIPT_REF.search(word_text(word))
        if m:
            self.refs.add(m.group(1))
            return True
        return False

    def _call(self, args):
        i = 0
        while i < len(args):
            name = word_literal(args[i])
            line = args[i]["Pos"]["Line"]
            if name is None:
                if self._ref(args[i]):
                    return
                # "${as_root[@]}" cmd ...: sudo, held in an array.
                if word_text(args[i]) == "\0" and i + 1 < len(args) and re.search(
                        r"as_root|sudo", self._source(args[i])):
                    i += 1
                    continue
                return      # built at run time: "$cc", "$@", ...
            if name == "tb5_install_deps":
                named = []
                for a in args[i + 1:]:
                    m = re.fullmatch(r'"\$\{(TB5_DEPS_\w+)\[@\]\}"', self._source(a))
                    if m:
                        self.lists.add(m.group(1))
                    else:
                        named.append(self._source(a))
                if named:
                    self.inline_installs.append((line, " ".join(named)))
                return
            if re.match(r"^[A-Za-z_]\w*=", name):
                i += 1
                continue
            if self._ref(args[i]):
                return
            self.commands.append((line, name))
            base = os.path.basename(name)
            if base in ELSEWHERE:
                return
            if base in WRAPPER_ARGS or base in WRAPPERS or base in FUNCTION_RUNNERS:
                i += 1
                if base in FUNCTION_RUNNERS:
                    i += FUNCTION_RUNNERS[base]
                    continue
                takes = WRAPPERS.get(base, set())
                fixed = WRAPPER_ARGS.get(base, 0)
                while i < len(args):
                    w = word_literal(args[i])
                    if w is None:
                        break
                    if w.startswith("-"):
                        i += 2 if w in takes else 1
                        continue
                    if base in ("env", "sudo") and re.match(r"^[A-Za-z_]\w*=", w):
                        i += 1
                        continue
                    break
                i += fixed
                continue
            if base in ("bash", "sh", "source", ".") and i + 1 < len(args):
                j = i + 1
                while j < len(args) and (word_literal(args[j]) or "").startswith("-") \
                        and word_literal(args[j]) != "-c":
                    j += 1
                if j < len(args) and word_literal(args[j]) == "-c" and j + 1 < len(args):
                    # bash -c 'STRING' runs STRING: read it as a script.
                    code = word_literal(args[j + 1])
                    if code is not None:
                        self._inline(code)
                elif j < len(args):
                    self._ref(args[j])
            return

    def _inline(self, code):
        proc = subprocess.run(["shfmt", "--to-json", "-ln", "bash"], input=code,
                              capture_output=True, text=True)
        if proc.returncode == 0:
            # Offsets now point into CODE: read words from it meanwhile.
            outer, self.src = self.src, code
            self._walk(json.loads(proc.stdout))
            self.src = outer


def tracked_scripts(root):
    files = sh("git", "-C", str(root), "ls-files").stdout.split()
    out = []
    for rel in files:
        if rel.startswith(("LICENSES/", "docs/img/")):
            continue
        p = root / rel
        if is_shell_script(p):
            out.append(rel)
    return sorted(out)


def guest_reason(rel):
    if rel in GUEST_FILES:
        return GUEST_FILES[rel]
    for pat, why in GUEST_PATTERNS:
        if pat.match(rel):
            return why
    return None


def cmake_scripts(root, scripts):
    """The shell scripts a CMake file names: (those the build runs, through
    execute_process or a custom command; those ctest runs, add_test)."""
    build, tests = set(), set()
    files = sh("git", "-C", str(root), "ls-files", "*CMakeLists.txt", "*.cmake").stdout.split()
    for cm in files:
        text = (root / cm).read_text()
        for m in re.finditer(r"\$\{[A-Za-z_]+\}/([\w./-]+\.sh)\b", text):
            r = resolve_ref(m.group(1), cm, scripts)
            if not r:
                continue
            calls = re.findall(r"^\s*(\w+)\s*\(", text[:m.start()], re.M)
            (tests if calls and calls[-1] == "add_test" else build).add(r)
    return build, tests


def resolve_ref(ref, frm, scripts):
    """The tracked script that a reference in FRM names, if any."""
    ref = ref.lstrip("/")
    cands = [str(Path(frm).parent / ref), ref, "ci/" + ref]
    for c in cands:
        c = os.path.normpath(c)
        if c in scripts:
            return c
    base = os.path.basename(ref)
    same = [s for s in scripts if os.path.basename(s) == base]
    if len(same) == 1:
        return same[0]
    return None


def deps_lists(root):
    """ci/lib.sh's TB5_DEPS_* arrays, as bash expands them."""
    code = ('source ci/lib.sh >/dev/null; for v in ${!TB5_DEPS_@}; do '
            'declare -n a=$v; echo "$v ${a[*]}"; unset -n a; done')
    out = subprocess.run(["bash", "-c", code], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    lists = {}
    for line in out.splitlines():
        name, *pkgs = line.split()
        lists[name] = set(pkgs)
    return lists


class BasePackages:
    """Debian's essential and required packages: a minbase system's.

    The archive's word counts (apt-cache: the Packages index, where the
    archive's overrides set Priority), not dpkg's status: dpkg keeps the
    priority a .deb's own control file gave, and a security update of apt
    says "important" there while the archive says "required". Without
    package lists (no apt-get update yet), dpkg's status is the fallback."""

    def __init__(self):
        self.cache = {}

    def prefetch(self, pkgs):
        """Looks the archive up for all of PKGS in one apt-cache call (one
        call per package took a second each). What it does not answer for
        (unknown to apt) is looked up one by one when asked."""
        pkgs = sorted(pkgs)
        if not pkgs:
            return
        r = sh("apt-cache", "show", "--no-all-versions", *pkgs, check=False)
        for stanza in r.stdout.split("\n\n"):
            f = self._fields(stanza.strip("\n"))
            name = f.get("Package")
            if name in pkgs and name not in self.cache:
                self.cache[name] = self._base(f)

    @staticmethod
    def _base(fields):
        return fields.get("Essential") == "yes" or fields.get("Priority") == "required"

    def __contains__(self, pkg):
        if pkg not in self.cache:
            self.cache[pkg] = self._lookup(pkg)
        return self.cache[pkg]

    @staticmethod
    def _fields(text):
        fields = {}
        for line in text.splitlines():
            if not line.strip():
                break       # the first (candidate) stanza only
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        return fields

    def _lookup(self, pkg):
        r = sh("apt-cache", "show", "--no-all-versions", pkg, check=False)
        f = self._fields(r.stdout) if r.returncode == 0 else {}
        if not f:
            r = sh("dpkg-query", "-W", "-f", "Essential: ${Essential}\nPriority: ${Priority}\n",
                   pkg, check=False)
            f = self._fields(r.stdout) if r.returncode == 0 else {}
        return self._base(f)


def load_map(path):
    m = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) not in (2, 3):
            raise SystemExit(f"{path}:{n}: want 'COMMAND PACKAGE [OWNER]', got {line!r}")
        m[parts[0]] = (parts[1], parts[-1])
    return m


# Where Debian's packages put programs: the map is checked against these,
# not against the PATH of whoever runs the audit (a python3 of pyenv in
# /root/.pyenv hid that Debian's /usr/bin/python3 is python3-minimal's).
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def dpkg_owner(cmd):
    path = shutil.which(cmd, path=SYSTEM_PATH)
    if not path:
        return None
    tries = [path, os.path.realpath(path)]
    for p in list(tries):
        # Debian 12 is merged-/usr: dpkg may know /bin/x for /usr/bin/x.
        if p.startswith("/usr/"):
            tries.append(p[4:])
        else:
            tries.append("/usr" + p)
    for p in tries:
        r = sh("dpkg-query", "-S", p, check=False)
        if r.returncode != 0:
            continue
        owners = set()
        for out in r.stdout.splitlines():
            if out.startswith("diversion by "):
                owners.add(out.split()[2])   # "diversion by dash from: /usr/bin/sh"
            else:
                owners |= {x.strip() for x in out.split(":")[0].split(",")}
        return owners
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    root = Path(opts.root).resolve()
    if not shutil.which("shfmt"):
        raise SystemExit("host-tools-audit: needs shfmt (apt-get install shfmt)")
    cmd_map = load_map(Path(__file__).resolve().parent / "host-tools.tsv")
    lists = deps_lists(root)
    base = BasePackages()
    base.prefetch({pkg for pkg, _ in cmd_map.values()})

    names = tracked_scripts(root)
    scripts = {rel: Script(rel, root) for rel in names}
    functions = set().union(*(s.functions for s in scripts.values()))
    # Both entries build the tree: what CMake runs, they run.
    built, tested = cmake_scripts(root, scripts)

    problems = []
    for s in scripts.values():
        for line, pkgs in s.inline_installs:
            if guest_reason(s.rel):
                continue
            problems.append(f"{s.rel}:{line}: tb5_install_deps {pkgs}: install a TB5_DEPS_* "
                            "list of ci/lib.sh instead, so that the audit sees it")

    checked = {}
    for entry in ENTRIES:
        # The scripts the entry reaches, and the lists they install.
        seen, todo = set(), [entry] + sorted(built)
        if entry == "ci/test.sh":      # the only one that runs ctest
            todo += sorted(tested)
        while todo:
            rel = todo.pop()
            if rel in seen or rel not in scripts or guest_reason(rel):
                continue
            seen.add(rel)
            for ref in scripts[rel].refs:
                r = resolve_ref(ref, rel, scripts)
                if r:
                    todo.append(r)
        installed = set()
        for rel in seen:
            for lst in scripts[rel].lists:
                if lst not in lists:
                    problems.append(f"{rel}: installs {lst}, which ci/lib.sh does not define")
                    continue
                installed |= lists[lst]
        if opts.verbose:
            print(f"{entry}: reaches {len(seen)} scripts: {' '.join(sorted(seen))}")
            print(f"{entry}: installs {len(installed)} packages")
        for rel in sorted(seen):
            for line, name in scripts[rel].commands:
                if "/" in name and not name.startswith(("/usr/", "/bin/", "/sbin/")):
                    continue        # a program of the tree, or a built one
                cmd = os.path.basename(name)
                if cmd in BUILTINS or cmd in functions or not cmd:
                    continue
                pkg = cmd_map.get(cmd, (None,))[0]
                where = f"{rel}:{line}"
                if pkg is None:
                    problems.append(f"{where}: '{cmd}' is not in ci/host-tools.tsv: "
                                    "add it with the Debian package that brings it")
                    continue
                checked.setdefault(cmd, set()).add(where)
                if pkg in base or pkg in NEW_USER_PACKAGES or pkg in installed:
                    continue
                problems.append(f"{where}: '{cmd}' comes from the package {pkg}, which "
                                f"is not essential and no TB5_DEPS_* list that {entry} "
                                "installs names it")

    # The map against dpkg, for the commands installed here.
    verified = 0
    for cmd in sorted(checked):
        owners = dpkg_owner(cmd)
        if owners is None:
            continue
        verified += 1
        if cmd_map[cmd][1] not in owners:
            problems.append(f"ci/host-tools.tsv: '{cmd}' is mapped to {cmd_map[cmd][1]}, "
                            f"but dpkg says it comes from {', '.join(sorted(owners))}")

    problems = sorted(set(problems))
    for p in problems:
        print(f"host-tools-audit: {p}", file=sys.stderr)
    print(f"host-tools-audit: {len(scripts)} scripts, {len(checked)} host commands "
          f"from {len({cmd_map[c][0] for c in checked})} packages "
          f"({verified} checked against dpkg here); entries {' '.join(ENTRIES)}: "
          f"{'OK' if not problems else str(len(problems)) + ' problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
