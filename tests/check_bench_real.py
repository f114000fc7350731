#!/usr/bin/env python3
"""bench/real runs a real program under omalloc and the other allocators
and prints one table row per program with a cell per allocator.

Usage: check_bench_real.py BENCH_REAL BUILD_DIR
"""

import importlib.machinery
import importlib.util
import os
import re
import resource
import subprocess
import sys
import tempfile


def main():
    real, build = sys.argv[1], sys.argv[2]
    res = subprocess.run([sys.executable, real, "--reps", "1",
                          "--programs", "sort", "--build", build],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=300)
    if res.returncode != 0:
        sys.exit("bench/real failed (%d): %s" % (res.returncode, res.stderr))
    rows = [l for l in res.stdout.splitlines() if l.startswith("|")]
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    if head[:3] != ["program", "omalloc", "glibc"]:
        sys.exit("unexpected header: %r" % rows[0])
    body = [r for r in rows[2:]]
    if len(body) != 1 or not body[0].startswith("| sort |"):
        sys.exit("expected one row for sort: %r" % body)
    cells = [c.strip() for c in body[0].strip("|").split("|")][1:]
    if len(cells) != len(head) - 1:
        sys.exit("row has %d cells for %d allocators" % (len(cells),
                                                        len(head) - 1))
    cell = re.compile(r"^\d+\.\d\d s \d+\.\d\dx, \d+\.\d MiB$")
    for name, c in zip(head[1:], cells):
        if not cell.match(c):
            sys.exit("%s: malformed cell %r" % (name, c))
    if not cells[1].split(",")[0].endswith(" 1.00x"):
        sys.exit("glibc's ratio to itself is not 1.00x: %r" % cells[1])
    # A bad argument is refused with status 2 and nothing run.
    bad = subprocess.run([sys.executable, real, "--programs", "nosuch",
                          "--build", build], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    if bad.returncode != 2 or "unknown program" not in bad.stderr:
        sys.exit("bad argument not refused: %d %r" % (bad.returncode,
                                                       bad.stderr))
    # One omalloc column per MALLOC_OPTIONS value, one per --against
    # library, only the allocators asked for.
    lib = os.path.join(build, "lib", "libomalloc.so")
    res = subprocess.run([sys.executable, real, "--reps", "1",
                          "--programs", "sort", "--build", build,
                          "--allocators", "glibc,omalloc", "--options=,S",
                          "--against", "again=" + lib],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=300)
    if res.returncode != 0:
        sys.exit("bench/real --options failed (%d): %s" % (res.returncode,
                                                           res.stderr))
    rows = [l for l in res.stdout.splitlines() if l.startswith("|")]
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    if head != ["program", "omalloc", "omalloc:S", "again", "glibc"]:
        sys.exit("unexpected header with --options: %r" % rows[0])
    cells = [c.strip() for c in rows[2].strip("|").split("|")][1:]
    if len(cells) != 4 or not all(cell.match(c) for c in cells):
        sys.exit("malformed row with --against: %r" % rows[2])
    # Each column's value reaches the program, and only omalloc's runs
    # get one (a MALLOC_OPTIONS of the caller's is not passed on).
    loader = importlib.machinery.SourceFileLoader("bench_real", real)
    spec = importlib.util.spec_from_loader("bench_real", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    os.environ["MALLOC_OPTIONS"] = "X"
    with tempfile.TemporaryDirectory() as tmp:
        peakrss = mod.launcher(build, tmp)
        mod.run_once(["sh", "-c", 'test "$MALLOC_OPTIONS" = S'], None, "S",
                     peakrss)
        _, kib = mod.run_once(["sh", "-c", 'test -z "${MALLOC_OPTIONS+set}"'],
                              None, None, peakrss)
    # The peak is the program's own: a shell's, far below this Python
    # process's, which a program started straight from Python inherits.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if not 0 < kib < own / 2:
        sys.exit("sh's peak %d KiB, this process's %d KiB" % (kib, own))
    # --verify: the outputs of omalloc's runs match glibc's, and a run
    # whose output differs is what it reports.
    res = subprocess.run([sys.executable, real, "--reps", "1",
                          "--programs", "sort,perl", "--build", build,
                          "--allocators", "glibc,omalloc", "--options=,S",
                          "--verify"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=300)
    if res.returncode != 0 or \
            "Outputs: every run of 2 program(s) wrote what glibc's did." \
            not in res.stdout:
        sys.exit("bench/real --verify (%d): %s %s" % (
            res.returncode, res.stdout[-500:], res.stderr[-500:]))
    bad, unsure = mod.verify_outputs({
        ("sort", "glibc"): ["a", "a"], ("sort", "omalloc"): ["a", "b"],
        ("sort", "omalloc:S"): ["a", "a"],
        ("perl", "glibc"): ["c", "d"], ("perl", "omalloc"): ["c", "c"],
        ("sqlite", "glibc"): ["e"], ("sqlite", "omalloc"): ["f"]},
        "glibc")
    if bad != ["sort under omalloc: 1 of 2 runs wrote other output than "
               "glibc's"] or unsure != ["perl", "sqlite"]:
        sys.exit("verify_outputs: %r %r" % (bad, unsure))
    with tempfile.TemporaryDirectory() as tmp:
        out, obj = os.path.join(tmp, "out"), os.path.join(tmp, "o")
        for path in (out, obj):
            with open(path, "w") as f:
                f.write("x")
        argv = ["cc", "-o", obj, "f.c"]
        before = mod.output_digest(argv, out)
        with open(obj, "w") as f:
            f.write("y")
        if mod.output_digest(argv, out) == before or \
                mod.output_digest(["cat"], out) == before:
            sys.exit("output_digest does not cover the -o file")
    for bad_args, what in ((["--allocators", "nosuch"], "unknown allocator"),
                           (["--options", "S1"], "bad MALLOC_OPTIONS"),
                           (["--against", lib], "expected NAME=LIB"),
                           (["--against", "glibc=" + lib], "already a column"),
                           (["--against", "x=" + lib + ".none"],
                            "no such file")):
        bad = subprocess.run([sys.executable, real, "--build", build] +
                             bad_args, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True)
        if bad.returncode != 2 or what not in bad.stderr:
            sys.exit("%r not refused: %d %r" % (bad_args, bad.returncode,
                                                 bad.stderr))
    print("ok: %s" % body[0])


if __name__ == "__main__":
    main()
