#!/usr/bin/env python3
"""Tests of bench/rig/busbw_table.py on synthetic gpus-suite logs (nccl-tests' formats, from
test_summarize.py). No GPU needed:  python3 bench/rig/test_busbw_table.py"""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import busbw_table  # noqa: E402
from test_summarize import CMD, START, footer, header, run_main, table, write_log  # noqa: E402


def write(folder, name, wrong=0, rc=0, rows=True, scale=1.0, extra=""):
    body = table([(1024, "float", "sum", (0, 0)), (1 << 20, "float", "sum", (wrong, 0))]) if rows else ""
    # The synthetic rows print busbw 1.50; `scale` rewrites it so ratios differ from 1.
    body = body.replace("  1.50  ", f"  {1.5 * scale:4.2f}  ")
    write_log(folder, name, extra + START + header() + body + footer(), rc)


def run(folder):
    return run_main(busbw_table.main, folder)


class BusbwTableTest(unittest.TestCase):
    def test_ratios_against_plain_per_mode(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "plain_mpi_all_reduce.log")
            write(d, "braid_mpi_all_reduce.log", scale=2.0)
            write(d, "braid-groups_g2_all_reduce.log")
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("== all_reduce, mpi", text)
            self.assertIn("== all_reduce, g2", text)
            row = [l for l in text.splitlines() if l.strip().startswith("1048576")][1].split()
            self.assertEqual(row[1:], ["1.50", "3.00", "2.00"])  # plain, braid, braid/plain

    def test_ratios_against_nccls_best_mode_where_the_call_ran_others(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "plain_mpi4-p0_all_gather.log")                 # 1.50
            write(d, "plain-r1_mpi4-p0_all_gather.log", scale=1.2)   # 1.80
            write(d, "plain-ce_mpi4-p0_all_gather.log", scale=1.6)   # 2.40, the best
            write(d, "braid_mpi4-p0_all_gather.log", scale=2.0)      # 3.00
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("braid/plain", text)
            self.assertIn("braid/best", text)
            row = [l for l in text.splitlines() if l.strip().startswith("1048576")][0].split()
            # plain, braid, plain-ce, plain-r1, braid/plain, braid/best
            self.assertEqual(row[1:], ["1.50", "3.00", "2.40", "1.80", "2.00", "1.25"])

    def test_a_failed_nccl_mode_is_only_said(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "plain_mpi_all_gather.log")
            write(d, "plain-ce_mpi_all_gather.log", rc=1, rows=False)
            write(d, "braid_mpi_all_gather.log")
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("failed (plain NCCL): plain-ce_mpi_all_gather.log", text)

    def test_a_mode_name_with_a_dash_and_a_collective_with_underscores(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "braid_t2-p1_reduce_scatter.log")
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("== reduce_scatter, t2-p1", text)

    def test_skipped_logs_are_said_not_failed(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "braid_mpi_reduce.log"), "w") as f:
                f.write(f"# command: {CMD}\n# SKIPPED: 27s of the run's 530s budget left\n")
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("skipped (budget): 1 logs: braid_mpi_reduce.log", text)

    def test_routed_exchange_lines_are_counted(self):
        with tempfile.TemporaryDirectory() as d:
            line = "host:1:2 [0] BRAID INFO routed exchange: 2 flows, 8 bytes, 0 relayed ranges\n"
            write(d, "plain_mpi_alltoall.log")
            write(d, "braid-route_mpi_alltoall.log", extra=line * 3)
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertEqual([l.split() for l in text.splitlines() if l.strip().startswith("routed")], [["routed", "0", "3"]])

    def test_braid_failures_fail_plain_ones_are_only_said(self):
        cases = {"wrong rows": dict(wrong=3), "timeout": dict(rc=124), "no rows": dict(rows=False)}
        for what, fault in cases.items():
            with self.subTest(what), tempfile.TemporaryDirectory() as d:
                write(d, "braid_mpi_all_gather.log", **fault)
                self.assertEqual(run(d)[0], 1, what)
        with tempfile.TemporaryDirectory() as d:
            write(d, "plain_mpi_all_gather.log", rc=124)
            write(d, "braid_mpi_all_gather.log")
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("failed (plain NCCL)", text)


if __name__ == "__main__":
    unittest.main()
