#!/usr/bin/env python3
"""Tests of bench/rig/route_table.py on synthetic route-suite logs (nccl-tests' formats, from
test_summarize.py). No GPU needed:  python3 -m pytest bench/rig/test_route_table.py"""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import route_table  # noqa: E402
from test_summarize import START, WARN, footer, header, run_main, table, write_log  # noqa: E402

ROUTED = "host:1:2 [0] BRAID INFO routed exchange: 4 flows, 4194304 bytes, 0 relayed ranges (epoch 3)\n"


def write(folder, name, wrong=0, routed=0, rc=0, warn=False):
    rows = [(1024, "float", "none", (0, 0)), (1 << 22, "float", "none", (wrong, 0))]
    text = ROUTED * routed + START + header() + table(rows) + (WARN if warn else "") + footer()
    write_log(folder, name, text, rc)


def run(folder):
    return run_main(route_table.main, folder)


class RouteTableTest(unittest.TestCase):
    def test_plain_and_braid_side_by_side_with_routed_lines(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "plain_n2_alltoall.log")
            write(d, "braid_n2_alltoall.log", routed=12)
            write(d, "plain_n2_broadcast.log")
            write(d, "braid_n2_broadcast.log")
            rc, text = run(d)
        self.assertEqual(rc, 0, text)
        braid = [l.split() for l in text.splitlines() if l.split()[:3] == ["alltoall", "2", "braid"]][0]
        self.assertEqual(braid[3:9], ["2", "0", "no", "no", "0", "12"])
        self.assertEqual(braid[-1], str(1 << 22))
        self.assertIn("alltoall routed", text)

    def failing(self, expected, name="braid_n4_alltoall.log", **log):
        with tempfile.TemporaryDirectory() as d:
            write(d, name, **log)
            rc, text = run(d)
        self.assertEqual(rc, 1, text)
        self.assertIn(expected, text)

    def test_braid_faults_fail(self):
        self.failing("1 wrong rows", routed=3, wrong=5)
        self.failing("hang (killed at its limit)", routed=3, rc=124)
        self.failing("failed", routed=3, rc=1)
        self.failing("1 WARN lines", routed=3, warn=True)
        self.failing("no routed exchange logged")
        # The send/recv groups every rank takes part in are routed too.
        for coll in ("alltoallv", "sendrecv", "hypercube"):
            self.failing("no routed exchange logged", name=f"braid_n4_{coll}.log")

    def test_a_binary_braid_leaves_to_nccl_needs_no_routed_line_and_plain_faults_only_show(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "braid_n2_broadcast.log")
            write(d, "plain_n2_broadcast.log", wrong=1)
            rc, text = run(d)
        self.assertEqual(rc, 0, text)
        self.assertIn("plain_n2_broadcast: 1 wrong rows", text)

    def test_gather_and_scatter_are_routed_too(self):
        for coll in ("gather", "scatter"):
            self.failing("no routed exchange logged", name=f"braid_n2_{coll}.log")
        with tempfile.TemporaryDirectory() as d:
            for coll in ("alltoall", "gather", "scatter"):
                write(d, f"braid_n2_{coll}.log", routed=4)
            rc, text = run(d)
        self.assertEqual(rc, 0, text)
        self.assertIn("alltoall, gather, scatter routed", text)

    def test_no_logs_fail(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(run(d)[0], 1)


if __name__ == "__main__":
    unittest.main()
