#!/usr/bin/env python3
"""omdump on fixture dumps: output and exit status.

Usage: test_fixtures.py OMDUMP FIXTURE_DIR [TestCase ...]
"""

import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

OMDUMP = None
FIXTURES = None


def run(*args):
    """Run omdump; return (status, stdout, stderr)."""
    res = subprocess.run([sys.executable, OMDUMP] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=60)
    return res.returncode, res.stdout, res.stderr


def fx(name):
    return os.path.join(FIXTURES, name)


class Base(unittest.TestCase):
    def ok(self, *args):
        status, out, err = run(*args)
        self.assertEqual(status, 0, "omdump %s: %s" % (args, err))
        self.assertEqual(err, "")
        return out

    def fails(self, status, *args):
        got, out, err = run(*args)
        self.assertEqual(got, status, "omdump %s: %r %r" % (args, out, err))
        self.assertNotIn("Traceback", err)
        return out, err

    def bad_input(self, *args):
        """Exit 1, nothing on stdout, one line on stderr."""
        out, err = self.fails(1, *args)
        self.assertEqual(out, "")
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("omdump: "), err)
        return err


class Normal(Base):
    def test_summary(self):
        out = self.ok("summary", fx("normal.out"))
        lines = out.splitlines()
        self.assertEqual(lines[0], "dump 0 of 1: leaky")
        self.assertEqual(lines[1], "options: MT=1 M=2 I=1 F=0 U=0 J=1 R=0 "
                         "X=0 C=0 cache=64 G=0")
        self.assertEqual(lines[2], "syscalls: mmap 41  munmap 3  "
                         "mprotect 12  madvise 0")
        rows = {l.split()[0]: l.split() for l in lines[3:]
                if l and l.split()[0] in ("0", "1", "conceal", "total")}
        self.assertEqual(rows["0"], ["0", "53248", "15/512", "120", "0.0200",
                                     "0.0250", "2500", "7", "-"])
        self.assertEqual(rows["1"], ["1", "4096", "2/512", "40", "0.0000",
                                     "0.0000", "0", "1", "-"])
        self.assertEqual(rows["conceal"], ["conceal", "0", "0/512", "0", "-",
                                           "-", "0", "0", "-"])
        self.assertEqual(rows["total"], ["total", "57344", "17/1536", "160",
                                         "0.0150", "0.0200", "2500", "8",
                                         "35024/21"])

    def test_json(self):
        d = json.loads(self.ok("json", fx("normal.out")))
        self.assertEqual(d["prog"], "leaky")
        self.assertEqual((d["index"], d["count"]), (0, 1))
        self.assertEqual(d["options"]["M"], 2)
        self.assertEqual(d["options"]["cache"], 64)
        self.assertEqual(d["syscalls"], {"mmap": 41, "munmap": 3,
                                         "mprotect": 12, "madvise": 0})
        self.assertEqual([p["pool"] for p in d["pools"]],
                         ["0", "1", "conceal"])
        p0 = d["pools"][0]
        self.assertEqual(p0["address"], "0x7f1c2a3b4000")
        expect = dict(region_slots_free=497, region_slots_total=512,
                      finds=120, find_collisions=4, inserts=30,
                      insert_collisions=1, deletes=15, delete_moves=0,
                      cheap_reallocs=2, cheap_realloc_tries=5, other_pool=3,
                      pool_searches=150, lock_contended=10, lock_total=400,
                      lock_wait_ns=2500, in_use=53248, guarded=0,
                      cached_pages=7)
        for k, v in expect.items():
            self.assertEqual(p0[k], v, k)
        self.assertEqual(p0["chunks"], [
            {"size": 16, "free": 200, "total": 256},
            {"size": 64, "free": 10, "total": 64},
            {"size": 1024, "free": 3, "total": 4}])
        self.assertAlmostEqual(p0["other_pool_ratio"], 0.02)
        self.assertAlmostEqual(p0["contended_ratio"], 0.025)
        self.assertIsNone(d["pools"][2]["contended_ratio"])
        t = d["total"]
        self.assertEqual((t["in_use"], t["finds"], t["pool_searches"],
                          t["other_pool"], t["lock_total"]),
                         (57344, 160, 200, 3, 500))
        self.assertEqual((t["leak_bytes"], t["leak_count"], t["leak_sites"]),
                         (35024, 21, 3))
        self.assertTrue(d["leak_report"])
        self.assertEqual(d["leaks"][0], {
            "site": "/tmp/leaky+0x1189", "object": "/tmp/leaky",
            "offset": "0x1189", "bytes": 13000, "count": 13, "avg": 1000})
        self.assertEqual([(l["bytes"], l["count"]) for l in d["leaks"]],
                         [(13000, 13), (21000, 7), (1024, 1)])

    def test_lock_bias(self):
        # Older dumps lack the biased/revoked counts: they read as 0.
        d = json.loads(self.ok("json", fx("normal.out")))
        self.assertEqual(d["pools"][0]["lock_biased"], 0)
        self.assertEqual(d["total"]["lock_revoked"], 0)
        with open(fx("normal.out")) as f:
            text = f.read()
        text = text.replace("Lock acquisitions 10/400, waited 2500 ns",
                            "Lock acquisitions 10/400, waited 2500 ns, "
                            "biased 300, revoked 2")
        with tempfile.NamedTemporaryFile("w", suffix=".out") as f:
            f.write(text)
            f.flush()
            d = json.loads(self.ok("json", f.name))
            rows = list(csv.DictReader(io.StringIO(self.ok("csv", f.name))))
        self.assertEqual((d["pools"][0]["lock_biased"],
                          d["pools"][0]["lock_revoked"]), (300, 2))
        self.assertEqual(d["pools"][0]["lock_total"], 400)
        self.assertEqual(d["total"]["lock_biased"], 300)
        self.assertEqual(rows[0]["lock_revoked"], "2")

    def with_lines(self, lines):
        """json and summary of normal.out with lines after Syscalls."""
        with open(fx("normal.out")) as f:
            text = f.read().replace("madvise 0\n", "madvise 0\n" + lines, 1)
        with tempfile.NamedTemporaryFile("w", suffix=".out") as f:
            f.write(text)
            f.flush()
            return (json.loads(self.ok("json", f.name)),
                    self.ok("summary", f.name).splitlines())

    def test_munmap_refused(self):
        # The line comes only after the kernel refused an munmap.
        d = json.loads(self.ok("json", fx("normal.out")))
        self.assertEqual(d["kept"], {})
        d, out = self.with_lines("Munmap refused 40, released in place: "
                                 "kept 12 runs 30 pages, list 1 pages, "
                                 "lost 0 runs\n")
        self.assertEqual(d["kept"], {"refused": 40, "runs": 12, "pages": 30,
                                     "list": 1, "lost": 0})
        self.assertEqual(out[3], "munmap refused 40: released in place, "
                         "kept 12 runs of 30 pages (list 1 pages), lost 0 "
                         "runs")

    def test_held_back_near_map_limit(self):
        # Both lines come once releases were held back near the limit.
        d = json.loads(self.ok("json", fx("normal.out")))
        self.assertEqual(d["maps"], {})
        d, out = self.with_lines("Mappings 49700 of 65530 at the last "
                                 "count, releases held back 3400, holding "
                                 "back\nMunmap refused 0, released in "
                                 "place: kept 3390 runs 6780 pages, list 14 "
                                 "pages, lost 0 runs\n")
        self.assertEqual(d["maps"], {"count": 49700, "limit": 65530,
                                     "held": 3400, "holding": True})
        self.assertEqual(d["kept"]["runs"], 3390)
        self.assertEqual(out[3], "mappings 49700 of 65530 at the last count: "
                         "3400 releases held back, holding back")
        self.assertEqual(out[4], "munmap refused 0: released in place, kept "
                         "3390 runs of 6780 pages (list 14 pages), lost 0 "
                         "runs")

    def test_csv(self):
        out = self.ok("csv", fx("normal.out"))
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual([r["pool"] for r in rows],
                         ["0", "1", "conceal", "total"])
        self.assertEqual(rows[0]["in_use"], "53248")
        self.assertEqual(rows[0]["contended_ratio"], "0.025000")
        self.assertEqual(rows[0]["leak_bytes"], "")
        self.assertEqual(rows[2]["other_pool_ratio"], "")
        self.assertEqual(rows[3]["in_use"], "57344")
        self.assertEqual(rows[3]["leak_bytes"], "35024")
        self.assertEqual(rows[3]["leak_count"], "21")
        self.assertEqual({r["dump"] for r in rows}, {"0"})

    def test_leaks(self):
        out = self.ok("leaks", "--no-resolve", fx("normal.out"))
        lines = out.splitlines()
        self.assertEqual(lines[0], "dump 0 of 1: leaky")
        self.assertEqual(lines[1].split(), ["site", "bytes", "count", "avg",
                                            "function", "line"])
        self.assertEqual([l.split() for l in lines[2:5]], [
            ["/tmp/leaky+0x11c5", "21000", "7", "3000"],
            ["/tmp/leaky+0x1189", "13000", "13", "1000"],
            ["/nonexistent/libc.so.6+0x7f3a1", "1024", "1", "1024"]])
        self.assertEqual(lines[5],
                         "total 35024 bytes in 21 allocations from 3 sites")

    def test_leaks_sorted_by_count(self):
        out = self.ok("leaks", "-n", "--sort", "count", fx("normal.out"))
        self.assertEqual([l.split()[2] for l in out.splitlines()[2:5]],
                         ["13", "7", "1"])

    def test_leaks_missing_object(self):
        # The objects do not exist here: the rows stay unresolved.
        out = self.ok("leaks", fx("normal.out"))
        self.assertEqual(out.splitlines()[2].split(),
                         ["/tmp/leaky+0x11c5", "21000", "7", "3000"])

    def test_leaks_none(self):
        out = self.ok("leaks", fx("multi.out"))
        self.assertEqual(out.splitlines()[-1], "no leaks")

    def test_verbose_lines_skipped(self):
        d = json.loads(self.ok("json", fx("verbose.out")))
        n = json.loads(self.ok("json", fx("normal.out")))
        self.assertEqual(d["total"]["in_use"], n["total"]["in_use"])
        self.assertEqual(d["total"]["cached_pages"], 8)
        self.assertIn("Hash table: 512 slots, 15 used, longest probe 3",
                      d["pools"][0]["extra"])
        self.assertEqual(len(d["pools"][0]["chunks"]), 3)
        for p, q in zip(d["pools"], n["pools"]):
            p.pop("extra")
            q.pop("extra")
            self.assertEqual(p, q)

    def test_self_diff_is_empty(self):
        out = self.ok("diff", "--changed", fx("normal.out"),
                      fx("normal.out"))
        self.assertNotIn("+", "".join(out.splitlines()[4:]))
        # syscalls, total and the three pools
        self.assertEqual(out.count("(no difference)"), 5)


class RealFormat(Base):
    """Dumps written by the library itself (MALLOC_OPTIONS=D and DV)."""

    def test_real(self):
        d = json.loads(self.ok("json", fx("real.out")))
        self.assertEqual(d["prog"], "omdump_prog_leaks")
        self.assertEqual(d["options"]["M"], 8)
        self.assertEqual([p["pool"] for p in d["pools"]],
                         [str(i) for i in range(8)] + ["conceal"])
        p1 = d["pools"][1]
        self.assertEqual((p1["in_use"], p1["cached_pages"], p1["finds"],
                          p1["pool_searches"], p1["lock_total"]),
                         (41984, 22, 107, 100, 221))
        self.assertEqual(p1["chunks"][0],
                         {"size": 48, "free": 85, "total": 85, "pages": 1})
        self.assertEqual(len(p1["chunks"]), 16)
        self.assertEqual(p1["extra"], [])
        self.assertEqual(d["leaks"], [
            {"site": "omdump_prog_leaks+0x11db",
             "object": "omdump_prog_leaks", "offset": "0x11db",
             "bytes": 21000, "count": 7, "avg": 3000},
            {"site": "omdump_prog_leaks+0x1186",
             "object": "omdump_prog_leaks", "offset": "0x1186",
             "bytes": 13312, "count": 13, "avg": 1024}])

    def test_real_verbose(self):
        d = json.loads(self.ok("json", fx("real-verbose.out")))
        self.assertEqual(len(d["pools"]), 9)
        p7 = d["pools"][7]
        self.assertEqual((p7["in_use"], p7["cached_pages"]), (41984, 6))
        self.assertIn("Hash table:", p7["extra"])
        self.assertIn("cache 0: 0x7ff5feffa000 1 pages", p7["extra"])
        self.assertEqual(d["total"]["leak_bytes"], 34312)

    def test_real_leaks_unresolved(self):
        out = self.ok("leaks", "-n", fx("real.out"))
        self.assertEqual([l.split() for l in out.splitlines()[2:4]], [
            ["omdump_prog_leaks+0x11db", "21000", "7", "3000"],
            ["omdump_prog_leaks+0x1186", "13312", "13", "1024"]])

    def test_dropped(self):
        # A full leak table makes the library add a line the rows miss.
        with open(fx("real.out")) as f:
            text = f.read()
        text = text.replace("******** End", "(5 allocations not listed: "
                            "table full)\n******** End")
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                            "omdump-dropped-%d.out" % os.getpid())
        with open(path, "w") as f:
            f.write(text)
        try:
            d = json.loads(self.ok("json", path))
            self.assertEqual(d["leaks_dropped"], 5)
            self.assertEqual(len(d["leaks"]), 2)
            out = self.ok("leaks", "-n", path)
            self.assertIn("and 5 allocations the dump did not list", out)
        finally:
            os.unlink(path)


class Multi(Base):
    def test_last_by_default(self):
        d = json.loads(self.ok("json", fx("multi.out")))
        self.assertEqual((d["index"], d["count"]), (1, 2))
        self.assertEqual(d["options"]["M"], 2)
        self.assertEqual(len(d["pools"]), 2)
        self.assertTrue(d["leak_report"])
        self.assertEqual(d["leaks"], [])

    def test_index(self):
        for i, m in ((0, 1), (1, 2), (-1, 2), (-2, 1)):
            d = json.loads(self.ok("json", "--index", str(i),
                                   fx("multi.out")))
            self.assertEqual(d["options"]["M"], m, i)
        out = self.ok("summary", "-i", "0", fx("multi.out"))
        self.assertEqual(out.splitlines()[0], "dump 0 of 2: bench")

    def test_index_out_of_range(self):
        err = self.bad_input("json", "--index", "2", fx("multi.out"))
        self.assertIn("holds 2 dumps, there is no index 2", err)
        self.bad_input("summary", "--index", "-3", fx("multi.out"))

    def test_all(self):
        ds = json.loads(self.ok("json", "--all", fx("multi.out")))
        self.assertEqual([d["index"] for d in ds], [0, 1])
        self.assertEqual([d["options"]["M"] for d in ds], [1, 2])
        rows = list(csv.DictReader(io.StringIO(
            self.ok("csv", "--all", fx("multi.out")))))
        self.assertEqual([(r["dump"], r["pool"]) for r in rows],
                         [("0", "0"), ("0", "total"), ("1", "0"), ("1", "1"),
                          ("1", "total")])
        out = self.ok("summary", "--all", fx("multi.out"))
        self.assertEqual(out.count("dump "), 2)

    def test_diff(self):
        out = self.ok("diff", "--a-index", "0", "--b-index", "1",
                      fx("multi.out"), fx("multi.out"))
        lines = [l.split() for l in out.splitlines()]
        self.assertIn(["M", "1", "2"], lines)
        self.assertIn(["contended_ratio", "0.3000", "0.0150", "-0.2850",
                       "-95.0%"], lines)
        self.assertIn(["lock_contended", "3000", "150", "-2850", "-95.0%"],
                      lines)
        self.assertIn(["other_pool", "0", "60", "+60"], lines)
        self.assertIn(["mmap", "20", "30", "+10", "+50.0%"], lines)
        self.assertIn("pool 0:", out)
        self.assertIn("pools only in B: 1", out)
        self.assertEqual(out.count("pool 1:"), 0)

    def test_diff_changed_only(self):
        out = self.ok("diff", "-c", "--a-index", "0", fx("multi.out"),
                      fx("multi.out"))
        self.assertNotIn("cheap_reallocs", out)
        self.assertIn("lock_total", out)     # pool 0 differs (10000, 6000)

    def test_diff_files(self):
        out = self.ok("diff", fx("normal.out"), fx("multi.out"))
        self.assertIn("leak_bytes", out)
        self.assertIn("/tmp/leaky+0x1189", out)
        self.assertIn("pools only in A: conceal", out)


class BadInput(Base):
    def test_truncated(self):
        err = self.bad_input("summary", fx("truncated.out"))
        self.assertIn("truncated", err)
        for cmd in ("csv", "json", "leaks"):
            self.bad_input(cmd, fx("truncated.out"))

    def test_malformed(self):
        err = self.bad_input("json", fx("malformed.out"))
        self.assertIn("pool 1 lacks the line 'In use'", err)

    def test_last_truncated(self):
        err = self.bad_input("summary", fx("last-truncated.out"))
        self.assertIn("dump 1", err)
        self.assertIn("truncated", err)
        self.ok("summary", "--index", "0", fx("last-truncated.out"))
        self.bad_input("json", "--all", fx("last-truncated.out"))

    def test_garbage(self):
        err = self.bad_input("summary", fx("garbage.out"))
        self.assertIn("not a malloc dump", err)

    def test_empty(self):
        err = self.bad_input("json", fx("empty.out"))
        self.assertIn("empty", err)

    def test_missing(self):
        err = self.bad_input("summary", fx("no-such-file.out"))
        self.assertIn("no such file", err)
        self.bad_input("diff", fx("normal.out"), fx("no-such-file.out"))

    def test_directory(self):
        self.bad_input("leaks", FIXTURES)

    def test_broken_pipe(self):
        p = subprocess.Popen([sys.executable, OMDUMP, "json", "--all",
                              fx("multi.out")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        p.stdout.read(1)
        p.stdout.close()
        err = p.stderr.read().decode()
        p.stderr.close()
        p.wait(timeout=60)
        self.assertNotIn("Traceback", err)


class Usage(Base):
    def test_usage(self):
        for args in ([], ["bogus", fx("normal.out")], ["summary"],
                     ["summary", "--all", "--index", "0", fx("multi.out")],
                     ["json", "--index", "x", fx("multi.out")],
                     ["diff", fx("normal.out")],
                     ["diff", "--all", fx("normal.out"), fx("normal.out")],
                     ["leaks", "--sort", "size", fx("normal.out")]):
            out, err = self.fails(2, *args)
            self.assertIn("usage:", err)

    def test_help(self):
        out = self.ok("--help")
        for cmd in ("summary", "csv", "json", "diff", "leaks"):
            self.assertIn(cmd, out)

    def test_executable(self):
        self.assertTrue(os.access(OMDUMP, os.X_OK))
        with open(OMDUMP) as f:
            self.assertEqual(f.readline(), "#!/usr/bin/env python3\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        sys.exit(2)
    OMDUMP, FIXTURES = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[3:])
