#!/usr/bin/env python3
"""Tests of bench/rig/summarize.py on synthetic logs written with nccl-tests 2.19's own printf
formats (src/util.cu: writeResultHeader, writeBenchmarkLinePreamble, writeBenchmarkLineBody,
writeResultFooter) and run.sh's first and last lines. No GPU needed:  python3 bench/rig/test_summarize.py
"""
import io
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import summarize  # noqa: E402


def float_str(value, width):
    """nccl-tests' getFloatStr."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        s = fmt % (width, value)
        if len(s) <= width:
            return s
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, value)


def header(cputime=False):
    t = "cputime" if cputime else "time"
    return ("#\n"
            "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n"
            % ("", "", "", "", "") +
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n"
            % ("size", "count", "type", "redop", "root", t, "algbw", "busbw", "#wrong", t, "algbw", "busbw",
               "#wrong", 0, "") +
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n"
            % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "",
               0, ""))


def preamble(size, count, typ, op, root):
    return "%12d  %12d  %8s  %6s  %6s" % (size, count, typ, op, "%6i" % root)


def body(time_us, wrong=0, check=True):
    alg = 1.5
    if check:
        return "  %7s  %6s  %6s  %6g" % (float_str(time_us, 7), float_str(alg, 6), float_str(alg, 6), wrong)
    return "  %7s  %6s  %6s    N/A" % (float_str(time_us, 7), float_str(alg, 6), float_str(alg, 6))


def footer(oob=0):
    return ("# %-20s : %d %s\n" % ("Out of bounds values", oob, "FAILED" if oob else "OK") +
            "# %-20s : %g %s\n" % ("Avg bus bandwidth", 1.23, "") +
            "#\n# Collective test concluded: all_reduce_perf\n#\n")


START = ("# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22803\n"
         "# Collective test starting: all_reduce_perf\n")


def run_main(main, folder):
    """A table script's main on `folder`: its exit code and what it printed."""
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main([folder])
    return rc, out.getvalue()


def run_sh(cmd, text, rc=0):
    return (f"# command: {cmd}\n# limit: 150s; started 00:00:00\n" + text +
            f"# exit: {rc} after 12s" + (" (TIMEOUT: killed at the 150s limit)" if rc == 124 else "") + "\n")


def write_log(folder, name, text, rc=0):
    """A rig log as bench/rig/run.sh writes it (CMD's command line, `text`, exit `rc`) at folder/name."""
    with open(os.path.join(folder, name), "w") as f:
        f.write(run_sh(CMD, text, rc))


CMD = "mpiexec -n 2 -genv LD_PRELOAD /x/libbraid.so /x/one-gpu-rank.sh stdbuf -o0 -e0 /tmp/rig/nccl-tests-mpi/all_reduce_perf -d all"
WARN = "\nhost:123:456 [0] BRAID WARN engine.cpp:12 peer 1 did not answer in 30 s\n"


def table(rows, check=True):
    out = ""
    for size, typ, op, wrong in rows:
        out += preamble(size, size // 4, typ, op, -1) + body(10.5, wrong[0], check) + body(11.25, wrong[1], check) + "\n"
    return out


class SummarizeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def check(self, name, text):
        return summarize.summarise(self.write(name, text))

    def test_clean_log_passes(self):
        rows = [(1024, "float", "sum", (0, 0)), (65536, "bfloat16", "mulsum", (0, 0)),
                (268435456, "f8e4m3", "avg", (0, 0))]
        bad, lines = self.check("braid_n2_all_reduce.log", run_sh(CMD, START + header() + table(rows) + footer()))
        self.assertFalse(bad, lines)
        self.assertIn("rows=3 wrong=0 cut_short=0 failures=0 oob=0 concluded=yes warn=0", lines[1])

    def test_wrong_rows_fail(self):
        rows = [(1024, "float", "sum", (0, 0)), (65536, "int8", "prod", (0, 3)), (4194304, "half", "max", (1e6, 0))]
        bad, lines = self.check("braid_n2_all_reduce.log", run_sh(CMD, START + header() + table(rows) + footer()))
        self.assertTrue(bad)
        self.assertIn("wrong=2", lines[1])
        self.assertTrue(any("WRONG:" in l and "int8" in l for l in lines), lines)

    def test_warn_between_a_rows_parts(self):
        text = (START + header() + preamble(1024, 256, "float", "sum", -1) + WARN + body(10) + body(11) + "\n" +
                preamble(2048, 512, "float", "sum", -1) + body(10) + WARN + body(11, 5) + "\n" + footer())
        bad, lines = self.check("braid_n2_all_reduce.log", run_sh(CMD, text))
        self.assertTrue(bad)
        self.assertIn("rows=2 wrong=1 cut_short=0", lines[1])
        self.assertIn("warn=2", lines[1])
        self.assertTrue(any("BRAID WARN engine.cpp:12 peer 1" in l for l in lines), lines)

    def test_log_lines_right_after_a_rows_digits(self):
        # As a rank logs mid-row: its line starts right after the root's "-1" and the #wrong's "0".
        info = "vm:686:686 [0] BRAID INFO routed exchange: 4 flows, 4194304 bytes, 0 relayed ranges (epoch 1)\n"
        text = (START + header() + preamble(4194304, 1048576, "float", "none", -1) + info + info + body(10) + info +
                body(11, 3) + "\n" + footer())
        bad, lines = self.check("braid_n2_alltoall.log", run_sh(CMD, text))
        self.assertTrue(bad)
        self.assertIn("rows=1 wrong=1 cut_short=0", lines[1])

    def test_timeout_inside_a_row(self):
        text = START + header() + table([(1024, "float", "sum", (0, 0))]) + preamble(268435456, 67108864, "float",
                                                                                  "sum", -1) + body(10)
        bad, lines = self.check("braid_n4_reduce.log", run_sh(CMD, text + "\n", rc=124))
        self.assertTrue(bad)
        self.assertIn("rows=1 wrong=0 cut_short=1", lines[1])
        self.assertIn("concluded=NO", lines[1])
        self.assertTrue(any("TIMEOUT" in l for l in lines))
        self.assertTrue(any("CUT SHORT" in l and "268435456" in l for l in lines))

    def test_rows_without_an_operator(self):
        # hypercube prints a blank redop; a time of 100 ms or more prints with no decimals.
        text = START + header()
        for size, time_us in ((1024, 10.5), (67108864, 101171.0)):
            text += preamble(size, size // 16, "float", "", -1) + body(time_us) + body(time_us, 2) + "\n"
        bad, lines = self.check("braid_n4_hypercube.log", run_sh(CMD, text + footer()))
        self.assertTrue(bad)
        self.assertIn("rows=2 wrong=2 cut_short=0", lines[1])

    def test_no_rows_is_not_a_pass(self):
        bad, lines = self.check("braid_n2_hypercube.log", run_sh(CMD, START + header() + footer()))
        self.assertTrue(bad)
        self.assertIn("rows=0", lines[1])

    def test_nccl_failure_line(self):
        text = START + header() + "host: Test NCCL failure common.cu:1190 'remote process exited or there was a network error / '\n"
        bad, lines = self.check("braid_n2_broadcast.log", run_sh(CMD, text, rc=3))
        self.assertTrue(bad)
        self.assertTrue(any("FAILURE" in l for l in lines))

    def test_out_of_bounds(self):
        bad, lines = self.check("braid_n2_all_gather.log",
                                run_sh(CMD, START + header() + table([(1024, "float", "none", (0, 0))]) + footer(4)))
        self.assertTrue(bad)
        self.assertIn("oob=4", lines[1])

    def test_plain_baseline_does_not_fail_the_summary(self):
        bad, lines = self.check("plain_n2_all_reduce.log",
                                run_sh(CMD, START + header() + table([(1024, "float", "sum", (2, 0))]) + footer()))
        self.assertFalse(bad)
        self.assertTrue(lines[0].startswith("BAD (baseline)"), lines[0])

    def test_host_time_table(self):
        rows = [(4096, "float", "sum", (0, 0)), (268435456, "float", "sum", (0, 0))]
        bad, lines = self.check("braid_n2.log", run_sh(CMD + " -C 1", START + header(cputime=True) +
                                                        table(rows, check=False) + footer()))
        self.assertFalse(bad, lines)
        self.assertTrue(any("268435456" in l and "10.50 /    11.25" in l for l in lines), lines)

    def test_probe_host_time_table(self):
        folder = os.path.join(self.dir, "hosttime")
        os.makedirs(folder)

        def probe_log(name, rnd, median_us):
            rows = "".join(f"{rank} 1048576 {p} {median_us + rank:.2f} 99.00 99.00 99.0\n"
                           for rank in (0, 1) for p in ("out", "in"))
            write_log(folder, f"probe_{name}_n2_r{rnd}.log", "# host_time_probe: rank 0 of 2\n" + rows)
        # Ranks 0 and 1 at m and m + 1: the round's figure is m + 0.5; the median over 3 rounds.
        for rnd, (plain, braid) in enumerate([(10, 12), (11, 30), (30, 13)], 1):
            probe_log("plain", rnd, plain)
            probe_log("braid", rnd, braid)
            # all_gather's logs make a table of their own.
            probe_log("all_gather_plain", rnd, plain)
            probe_log("all_gather_braid", rnd, braid + 10)
        paths = [os.path.join(folder, f) for f in sorted(os.listdir(folder))]
        lines = summarize.compare_probe_host_times(paths)
        reduce_at = lines.index(next(l for l in lines if l.startswith("== host time per call, 2 ranks, each")))
        gather_at = lines.index(next(l for l in lines if l.startswith("== host time per call, 2 ranks, all_gather")))
        self.assertTrue("1048576 out" in lines[reduce_at + 1] and
                        "11.50 /    13.50 /   +2.00  (3/3 rounds)" in lines[reduce_at + 1], lines)
        self.assertEqual(lines[reduce_at + 3], "  0 sizes over NCCL's host time + 5 us")
        self.assertIn("+12.00  (3/3 rounds)  OVER", lines[gather_at + 1])
        self.assertEqual(lines[gather_at + 3], "  2 sizes over NCCL's host time + 5 us")
        # nccl-tests' table leaves the probe's logs out.
        self.assertEqual(summarize.compare_host_times(paths), [])

    def test_dying(self):
        ok = ('{"rank": 0, "nranks": 3, "result": "OK", "victim": 2, "calls_done": 20, "error_code": 6, '
              '"error_from": "async", "error_string": "remote process exited or there was a network error", '
              '"last_error": "NET/Socket : peer closed", "seconds_to_error": 0.0123, '
              '"seconds_since_last_completion": 0.0200, "seconds_since_victim_exit": 0.0123, '
              '"abort_seconds": 0.2, "abort_result": 0, "abort_bound": 2.000}\n')
        hang = ('{"rank": 1, "nranks": 3, "result": "HANG", "victim": 2, "calls_done": 20, "error_code": 6, '
                '"error_from": "async", "error_string": "x", "last_error": "", "seconds_to_error": 0.5, '
                '"seconds_since_last_completion": 0.5, "seconds_since_victim_exit": null, '
                '"abort_seconds": null, "abort_waited": 10.000, "abort_bound": 2.000}\n')
        cmd = "mpiexec -n 3 /x/one-gpu-rank.sh /tmp/rig/dying_rank --id-file /tmp/d/id"
        bad, lines = self.check("braid_n3.log", run_sh(cmd, ok + ok.replace('"rank": 0', '"rank": 1')))
        self.assertFalse(bad, lines)
        bad, lines = self.check("braid_n3.log", run_sh(cmd, ok + hang, rc=3))
        self.assertTrue(bad)
        self.assertTrue(any("HANG" in l for l in lines))
        bad, lines = self.check("braid_n3.log", run_sh(cmd, ok))  # one survivor missing
        self.assertTrue(bad)

    def test_injected_fault_every_rank_returns_the_same_way(self):
        done = '{"rank": %d, "nranks": 2, "result": "COMPLETED", "victim": null, "calls_done": 30}\n'
        err = ('{"rank": %d, "nranks": 2, "result": "OK", "victim": -2, "calls_done": 3, "error_code": 3, '
               '"error_from": "async", "error_string": "internal error", "last_error": "injected", '
               '"seconds_to_error": 0.1, "seconds_since_last_completion": 0.1, "seconds_since_victim_exit": null, '
               '"abort_seconds": 0.2, "abort_result": 0, "abort_bound": 2.000}\n')
        cmd = "mpiexec -n 2 /x/one-gpu-rank.sh /tmp/rig/dying_rank --id-file /tmp/d/id --victim none"
        for text, fails in ((done % 0 + done % 1, False), (err % 0 + err % 1, False),
                            (done % 0 + err % 1, True),  # one fell back, the other failed
                            (err % 0, True),  # a rank never reported
                            (err % 0 + err.replace('"OK"', '"HANG"') % 1, True)):
            bad, lines = self.check("braid_n2_d2h.log", run_sh(cmd, text))
            self.assertEqual(bad, fails, lines)

    def test_injected_fault_must_fire(self):
        done = '{"rank": %d, "nranks": 2, "result": "COMPLETED", "victim": null, "calls_done": 30}\n'
        cmd = ("mpiexec -n 2 -genv BRAID_FAULT d2h@1 /x/one-gpu-rank.sh /tmp/rig/dying_rank --id-file /tmp/d/id "
               "--victim none")
        bad, lines = self.check("braid_n2_d2h-1.log", run_sh(cmd, done % 0 + done % 1))
        self.assertTrue(bad, lines)
        self.assertTrue(any("FAULT NOT REACHED" in l for l in lines), lines)
        # As braid logs it: NCCL's log prefix, which puts the line among the log's WARN lines.
        fired = "vm:7131:7131 [0] BRAID WARN internal error: rank 1: failure injected at step 'd2h' (BRAID_FAULT)\n"
        bad, lines = self.check("braid_n2_d2h-1.log", run_sh(cmd, fired + done % 0 + done % 1))
        self.assertFalse(bad, lines)

    def test_skipped(self):
        bad, lines = self.check("braid_n4_reduce.log", f"# command: {CMD}\n# SKIPPED: 12s of the run's 540s budget left\n")
        self.assertFalse(bad)
        self.assertTrue(lines[0].startswith("SKIP"))

    def test_command_line_exit_code(self):
        self.write("plain_n2_all_reduce.log", run_sh(CMD, START + header() + table([(1024, "float", "sum", (0, 0))]) + footer()))
        ok = subprocess.run([sys.executable, os.path.join(HERE, "summarize.py"), self.dir], capture_output=True, text=True)
        self.assertEqual(ok.returncode, 0, ok.stdout)
        self.write("braid_n2_all_reduce.log", run_sh(CMD, START + header() + table([(1024, "float", "sum", (0, 0))]), rc=124))
        bad = subprocess.run([sys.executable, os.path.join(HERE, "summarize.py"), self.dir], capture_output=True, text=True)
        self.assertEqual(bad.returncode, 1, bad.stdout)
        self.assertIn("1 failing", bad.stdout)


if __name__ == "__main__":
    unittest.main()
