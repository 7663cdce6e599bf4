#!/usr/bin/env python3
"""Tests of bench/rig/net_table.py on synthetic net-suite logs (nccl-tests' formats, from
test_summarize.py). No GPU needed:  python3 bench/rig/test_net_table.py"""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import net_table  # noqa: E402
from test_summarize import START, footer, header, run_main, table, write_log  # noqa: E402

LOADED = "host:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin braid (v11)\n"


def write(folder, name, wrong=0, loaded=True, rc=0):
    rows = [(1024, "float", "sum", (0, 0)), (1 << 20, "float", "sum", (wrong, 0))]
    text = (LOADED if loaded else "") + START + header() + table(rows) + footer()
    write_log(folder, name, text, rc)


def run(folder):
    return run_main(net_table.main, folder)


class NetTableTest(unittest.TestCase):
    def test_side_by_side_with_ratios(self):
        with tempfile.TemporaryDirectory() as d:
            for v in ("plain-socket", "braid-net-1nic", "braid-net-2nic"):
                write(d, f"{v}_n2_all_reduce.log", loaded=v != "plain-socket")
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("== all_reduce, 2 ranks", text)
            self.assertIn("braid 1 NIC / NCCL socke", text)
            row = [l for l in text.splitlines() if l.strip().startswith("1048576")][0]
            self.assertEqual(row.split()[-3:-1], ["1.00", "1.00"])  # both ratios, the shaped one absent
            self.assertIn("loaded", text)

    def test_two_threads_per_nic_has_its_ratio_only_where_it_ran(self):
        with tempfile.TemporaryDirectory() as d:
            for v in ("plain-socket", "braid-net-1nic", "braid-net-1nic-2thr"):
                write(d, f"{v}_n2_all_reduce.log", loaded=v != "plain-socket")
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("1 NIC 2 threads / NCCL", text)
            row = [l for l in text.splitlines() if l.strip().startswith("1048576")][0].split()
            self.assertEqual(row[4:7], ["1.00", "1.00", "-"])  # 1 thread, 2 threads, no 2-NIC run
        with tempfile.TemporaryDirectory() as d:
            write(d, "braid-net-1nic_n2_all_reduce.log")
            self.assertNotIn("2 threads", run(d)[1])

    def failing(self, name, expected, **log):
        """One log written with `log`'s faults: net_table must fail and say `expected`."""
        with tempfile.TemporaryDirectory() as d:
            write(d, name, **log)
            rc, text = run(d)
        self.assertEqual(rc, 1, text)
        self.assertIn(expected, text)
        return text

    def test_wrong_rows_and_a_missing_plugin_fail(self):
        text = self.failing("braid-net-2nic_n2_sendrecv.log", "#wrong", wrong=3)
        counts = [l for l in text.splitlines() if l.strip().startswith("#wrong")][0]
        self.assertEqual(counts.split()[-1], "1")  # one row with wrong elements
        self.failing("braid-net-1nic_n2_sendrecv.log", "NOT LOADED", loaded=False)

    def test_a_failed_run_is_reported(self):
        self.failing("braid-net-1nic_n4_all_gather.log", "FAILED: braid-net-1nic_n4_all_gather.log", rc=124)


if __name__ == "__main__":
    unittest.main()
