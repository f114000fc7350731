#!/usr/bin/env python3
"""Run small programs linked with omalloc and check their dumps via omdump.

Usage: test_real.py OMDUMP CASE PROGRAM [ARGS...]

CASE is one of leaks, crossfree, contention, inuse.  Each program runs with
MALLOC_OPTIONS set for the case and MALLOC_DUMP_FILE in a temporary
directory; the dump is read back with `omdump json`.  Only robust facts are
asserted (exact leak totals, counters above zero, one ratio below another),
never timings: the machines that run this are small and shared.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

TIMEOUT = 60


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run_prog(prog, args, options, dump_file):
    env = dict(os.environ)
    env["MALLOC_OPTIONS"] = options
    env["MALLOC_DUMP_FILE"] = dump_file
    res = subprocess.run([prog] + args, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True,
                         timeout=TIMEOUT)
    check(res.returncode == 0,
          "%s %s (MALLOC_OPTIONS=%s) exited with %d; stderr:\n%s" %
          (prog, " ".join(args), options, res.returncode, res.stderr))
    check(os.path.exists(dump_file),
          "MALLOC_OPTIONS=%s wrote no dump to MALLOC_DUMP_FILE=%s" %
          (options, dump_file))
    return res


def omdump(omdump_path, *args):
    res = subprocess.run([sys.executable, omdump_path] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=TIMEOUT)
    check(res.returncode == 0, "omdump %s failed (%d): %s" %
          (" ".join(args), res.returncode, res.stderr.strip()))
    return res.stdout


def dump_json(omdump_path, path, index=None):
    args = ["json", path]
    if index is not None:
        args += ["--index", str(index)]
    return json.loads(omdump(omdump_path, *args))


def same_object(obj, prog):
    """Whether a leak site's object names the test program."""
    if not obj:
        return False
    if os.path.basename(obj) != os.path.basename(prog):
        return False
    try:
        return os.path.samefile(obj, prog)
    except OSError:
        return True   # A relative name from argv[0]; the basename matched.


def case_leaks(od, prog, args, tmp):
    dump_file = os.path.join(tmp, "dump.out")
    run_prog(prog, args, "D", dump_file)
    d = dump_json(od, dump_file)
    check(d["count"] == 1, "expected one dump, found %d" % d["count"])
    check(d["leak_report"], "the dump has no leak report")
    mine = [l for l in d["leaks"] if same_object(l["object"], prog)]
    got = sorted((l["bytes"], l["count"], l["avg"]) for l in mine)
    want = [(13000, 13, 1000), (21000, 7, 3000)]
    check(got == want,
          "leak lines from %s: want %s, got %s\nall leak lines:\n%s" %
          (prog, want, got, "\n".join("  %s %d %d %d" % (
              l["site"], l["bytes"], l["count"], l["avg"])
              for l in d["leaks"])))
    # The sites resolve to the two functions when addr2line is present.
    if shutil.which("addr2line"):
        # The dump names objects without their directory.
        text = omdump(od, "leaks", "--dir", os.path.dirname(prog),
                      dump_file)
        rows = {}
        for line in text.splitlines():
            f = line.split()
            if len(f) >= 5 and "+0x" in f[0] and f[1].isdigit() and \
                    f[2].isdigit():
                rows[(int(f[1]), int(f[2]))] = f[4]
        check(rows.get((13000, 13)) == "leak_small" and
              rows.get((21000, 7)) == "leak_large",
              "addr2line did not name leak_small/leak_large:\n" + text)
    print("leak lines: %s" % got)


def case_crossfree(od, prog, args, tmp):
    dump_file = os.path.join(tmp, "dump.out")
    run_prog(prog, args, "D", dump_file)
    d = dump_json(od, dump_file)
    t = d["total"]
    print("M=%s other pool searches %d/%d" % (d["options"].get("M"),
                                             t["other_pool"],
                                             t["pool_searches"]))
    check(d["options"].get("M", 0) > 1,
          "expected several pools by default, options: %s" %
          d["options_line"])
    check(t["pool_searches"] > 0, "no pool searches counted")
    check(t["other_pool"] > 0,
          "threads freed each other's blocks, yet Other pool searches is "
          "%d/%d" % (t["other_pool"], t["pool_searches"]))


def contention_run(od, prog, args, tmp, options, n):
    dump_file = os.path.join(tmp, "dump-%s-%d.out" % (options, n))
    run_prog(prog, args, options, dump_file)
    return dump_json(od, dump_file)


def case_contention(od, prog, args, tmp):
    # Scheduling decides how much two threads overlap, so a comparison that
    # fails is retried; one clean ordering out of three runs is required.
    attempts = []
    for n in range(3):
        one = contention_run(od, prog, args, tmp, "D-----", n)
        many = contention_run(od, prog, args, tmp, "D+", n)
        check(one["options"].get("M") == 1,
              "D----- should leave one pool: %s" % one["options_line"])
        check(many["options"].get("M", 0) >= 2,
              "D+ should give several pools: %s" % many["options_line"])
        t1, tm = one["total"], many["total"]
        r1 = t1["contended_ratio"] or 0.0
        rm = tm["contended_ratio"] or 0.0
        print("attempt %d: M=1 contended %d/%d (%.4f); M=%d contended "
              "%d/%d (%.4f)" % (n, t1["lock_contended"], t1["lock_total"], r1,
                                many["options"]["M"], tm["lock_contended"],
                                tm["lock_total"], rm))
        attempts.append((t1["lock_contended"], r1, rm))
        check(t1["lock_total"] > 0, "no lock acquisitions counted")
        if t1["lock_contended"] > 0 and rm < r1:
            return
    raise Failure("want contended > 0 with one pool and a lower contended "
                  "ratio with more pools; got (contended, ratio M=1, ratio "
                  "M>1) = %s" % attempts)


def case_inuse(od, prog, args, tmp):
    dump_file = os.path.join(tmp, "exit.out")
    gdump = os.path.join(tmp, "gdump.out")
    run_prog(prog, args + [gdump], "D", dump_file)
    dumps = [dump_json(od, gdump, i) for i in range(3)]
    check(dumps[0]["count"] == 3, "expected 3 dumps from malloc_gdump, "
          "found %d" % dumps[0]["count"])
    base, full, after = (d["total"]["in_use"] for d in dumps)
    print("in use: baseline %d, allocated %d, freed %d" % (base, full, after))
    # The page regions of the pattern: 8 times (4096 + 9000 + 65536 +
    # 300000) bytes; chunks may land in pages that were already in use.
    regions = 8 * (4096 + 9000 + 65536 + 300000)
    check(full - base >= regions,
          "In use grew by %d with %d bytes of page regions allocated" %
          (full - base, regions))
    check(after == base,
          "In use did not return to its baseline after the frees: "
          "%d before, %d after (%+d)" % (base, after, after - base))


CASES = {
    "leaks": case_leaks,
    "crossfree": case_crossfree,
    "contention": case_contention,
    "inuse": case_inuse,
}


def main(argv):
    if len(argv) < 4 or argv[2] not in CASES:
        sys.stderr.write("usage: test_real.py OMDUMP CASE PROGRAM [ARGS...]\n"
                         "cases: %s\n" % " ".join(sorted(CASES)))
        return 2
    od, case, prog, args = argv[1], argv[2], argv[3], argv[4:]
    tmp = tempfile.mkdtemp(prefix="omdump-%s-" % case)
    try:
        CASES[case](od, os.path.abspath(prog), args, tmp)
    except Failure as e:
        print("FAIL %s: %s" % (case, e))
        print("dumps kept in %s" % tmp)
        return 1
    except subprocess.TimeoutExpired as e:
        print("FAIL %s: timed out: %s" % (case, e))
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("ok %s" % case)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
