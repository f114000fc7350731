#!/usr/bin/env python3
"""bench/run's table: each ratio is the median of the ratios of runs
paired within a repetition, the geometric mean is taken over those, the
goals section reads each goal off the rows it covers, and each
repetition starts one configuration further along.

Usage: check_bench_run.py BENCH_RUN
"""

import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import time
import types


def load(path):
    loader = importlib.machinery.SourceFileLoader("bench_run", path)
    spec = importlib.util.spec_from_loader("bench_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def rows_of(cell, key, values):
    """values: {config: [value per repetition]} -> result rows."""
    rows = []
    for config, vals in values.items():
        for rep, v in enumerate(vals, 1):
            rows.append({"kind": "rep", "rep": rep, "config": config,
                         "cell": cell, "status": "ok", key: v})
    return rows


def main():
    br = load(sys.argv[1])
    lps = "lps size=64 threads=1 seconds=0.1"
    larson = "larson threads=1 seconds=0.2"
    # Runs that fall into a fast and a slow mode one by one: lps's
    # medians (200 against 100) say 2.00x, its runs paired within each
    # repetition 1.00x; larson's pairs read 0.50x, and the geometric mean
    # of the two rows is 0.71x (1.00x from the medians).
    rows = rows_of(lps, "loops_per_sec",
                   {"omalloc": [200, 300, 50], "glibc": [100, 300, 100]})
    rows += rows_of(larson, "ops_per_sec",
                    {"omalloc": [50, 50, 400], "glibc": [100, 100, 200]})
    table = br.collect(rows)
    got = br.paired_ratio(table[(lps, "loops_per_sec")]["omalloc"],
                          table[(lps, "loops_per_sec")]["glibc"])
    if got != 1.0:
        sys.exit("paired ratio %r, expected 1.0" % got)
    # A repetition the baseline lacks (or where it read 0) is left out.
    got = br.paired_ratio({1: 10.0, 2: 40.0, 3: 90.0},
                          {1: 10.0, 2: 0.0})
    if got != 1.0:
        sys.exit("paired ratio over the common repetitions %r" % got)
    if br.paired_ratio({1: 1.0}, {2: 1.0}) is not None:
        sys.exit("paired ratio without a common repetition")

    configs = [br.Config("omalloc", None, ""), br.Config("glibc", None)]
    runner = types.SimpleNamespace(
        rows=rows, opts=types.SimpleNamespace(reps=3), load_start="0.00",
        start=time.monotonic(), out=tempfile.gettempdir(), failures=[])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "results.md")
        br.write_markdown(path, runner, configs,
                          [("lps", ["size=64", "threads=1", "seconds=0.1"]),
                           ("larson", ["threads=1", "seconds=0.2"])],
                          "glibc", [], "quick", None)
        text = open(path).read()
    want = {"| %s | loops_per_sec ↑ |" % lps: "1.00x",
            "| %s | ops_per_sec ↑ |" % larson: "0.50x",
            "| **throughput, 2 rows** | geometric mean of the ratios ↑ |":
            "0.71x"}
    seen = set()
    for line in text.splitlines():
        for head, ratio in want.items():
            if line.startswith(head):
                omalloc = line[len(head):].split("|")[0].strip()
                if not omalloc.endswith(ratio):
                    sys.exit("%s omalloc cell %r, expected %s" %
                             (head, omalloc, ratio))
                seen.add(head)
    if seen != set(want):
        sys.exit("rows missing from the table: %r\n%s" %
                 (sorted(set(want) - seen), text))
    goal = ("| ≥ 0.5x glibc: lps up to 1 KiB, 1 thread | 1 | 1 | 1.00x | "
            "none |")
    if "\n## Against the goals\n" not in text or \
            goal not in text.splitlines():
        sys.exit("goals section missing or wrong:\n%s" % text)

    # The goals section: each goal's rows, paired ratios of omalloc's
    # speed to the allocator it names, a time row inverted.
    small = "lps size=64 threads=1 seconds=0.1"
    big = "lps size=64k threads=8 seconds=0.1"
    touch = "lps size=64k threads=8 touch=1 seconds=0.1"
    xfree = "xfree size=64 rounds=200"
    l8 = "larson threads=8 seconds=0.2"
    rows = rows_of(small, "loops_per_sec",
                   {"omalloc": [30, 60, 30], "glibc": [100, 100, 100],
                    "scudo": [20, 20, 40]})
    rows += rows_of(big, "loops_per_sec",
                    {"omalloc": [90, 90, 90], "glibc": [100, 100, 80]})
    rows += rows_of(touch, "loops_per_sec",
                    {"omalloc": [10, 10, 10], "glibc": [1, 1, 1]})
    rows += rows_of(xfree, "local_ns",
                    {"omalloc": [10, 10, 10], "scudo": [30, 30, 30]})
    rows += rows_of(xfree, "remote_ns",
                    {"omalloc": [40, 40, 40], "scudo": [20, 20, 20]})
    rows += rows_of(l8, "ops_per_sec",
                    {"omalloc": [50, 50, 50], "glibc": [40, 40, 40]})
    # Peaks over glibc's, xfree's own ratio, pairs over the floor.
    rows += rows_of(small, "maxrss_kib",
                    {"omalloc": [130, 130, 140], "glibc": [100, 100, 100]})
    rows += rows_of(l8, "maxrss_kib",
                    {"omalloc": [90, 90, 90], "glibc": [100, 100, 100]})
    rows += rows_of(xfree, "ratio", {"omalloc": [1.5, 2.5, 2.2]})
    floor = {small: {"omalloc": [1.4, 1.6, 1.5]},
             "lps size=256 threads=1 seconds=0.1": {"omalloc": [4.0]}}
    got = br.goal_lines(br.collect(rows), floor)
    want = [
        "| ≥ 2.0x scudo: lps, 64 B to 4 KiB, 1 and 8 threads | 1 | 0 | "
        "1.50x | %s 1.50x |" % small,
        "| ≥ 1.0x scudo: every other speed row | 2 | 1 | 0.50–3.00x | "
        "%s (remote_ns) 0.50x |" % xfree,
        "| ≥ 0.5x glibc: lps up to 1 KiB, 1 thread | 1 | 0 | 0.30x | "
        "%s 0.30x |" % small,
        "| ≥ 1.0x glibc: larson and threadtest, 8 threads | 1 | 1 | 1.25x | "
        "none |",
        "| ≥ 1.0x glibc: lps with 64 KiB blocks, 1 and 8 threads | 1 | 0 | "
        "0.90x | %s 0.90x |" % big,
        "| ≤ 1.2x glibc: peak memory, every row | 2 | 1 | 0.90–1.30x | "
        "%s (maxrss_kib) 1.30x |" % small,
        "| ≤ 2.0x: a free into another pool over a local one | 1 | 0 | "
        "2.20x | %s 2.20x |" % xfree,
        "| ≤ 3.0x: a 64-byte pair over the machine floor | 1 | 1 | 1.50x | "
        "none |",
    ]
    if got != want:
        sys.exit("goals:\n%s\nexpected:\n%s" % ("\n".join(got),
                                                   "\n".join(want)))

    # Each repetition starts one configuration further along.
    firsts = [br.rotated(["a", "b", "c"], rep)[0] for rep in range(1, 5)]
    if firsts != ["a", "b", "c", "a"]:
        sys.exit("first configuration of each repetition: %r" % firsts)
    if sorted(br.rotated(["a", "b", "c"], 2)) != ["a", "b", "c"]:
        sys.exit("a rotation lost a configuration")


if __name__ == "__main__":
    main()
