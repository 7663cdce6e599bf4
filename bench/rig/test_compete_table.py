#!/usr/bin/env python3
"""Tests of bench/rig/compete_table.py on synthetic compete-suite logs (nccl-tests' formats, from
test_summarize.py; net_bench's report line). No GPU needed:  python3 bench/rig/test_compete_table.py"""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compete_table  # noqa: E402
from test_summarize import START, float_str, footer, header, preamble, run_main, write_log  # noqa: E402

LOADED = "host:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin braid (v11)\n"
FAIR = "mode: namespaces: 2 hosts, 2 NICs each (nic0..), 2000 Mbit/s each way per NIC (tc tbf); fair\n"
UNFAIR = "mode: loopback: NOT FAIR: NCCL's socket transport on lo unshaped\n"
SIZES = (32 << 20, 128 << 20)


def rows(busbw, wrong=0):
    """One row per size: out of place at busbw (GB/s), in place at half of it; `wrong` in the last."""
    out = ""
    for s in SIZES:
        for bw, w in ((busbw, wrong if s == SIZES[-1] else 0), (busbw / 2, 0)):
            out += "" if bw == busbw / 2 else preamble(s, s // 4, "float", "sum", -1)
            out += "  %7s  %6s  %6s  %6g" % (float_str(1000.0, 7), float_str(bw, 6), float_str(bw, 6), w)
        out += "\n"
    return out


def nic_bytes(nic0, nic1):
    return f"# nic-bytes h0 nic0 {nic0 << 20}\n# nic-bytes h0 nic1 {nic1 << 20}\n# nic-bytes h1 nic0 100\n"


def write(folder, variant, cond, busbw, work="sendrecv", wrong=0, loaded=True, rc=0, nics=(100, 0)):
    """One log; `nics`: host 0's MB sent on nic0 and nic1."""
    if work == "net_bench":
        text = (f"{'plain ' if variant.startswith('plain') else 'braid '} recv  nics=nic0  streams=1 rate=0 MB/s: "
                f"268435456 bytes in 1.000 s = {busbw:.1f} MB/s\n")
    else:
        text = (LOADED if loaded else "") + START + header() + rows(busbw, wrong) + footer()
    write_log(folder, f"{variant}_{cond}_n2_{work}.log", text + nic_bytes(*nics), rc)


def run(folder):
    return run_main(compete_table.main, folder)


def four(folder, work="sendrecv", values=(0.4, 0.8, 0.2, 0.6), **braid):
    """The four logs of a workload: NCCL and braid, quiet and under a competing flow."""
    write(folder, "plain-socket", "quiet", values[0], work)
    write(folder, "braid-net", "quiet", values[1], work, nics=(50, 50), **braid)
    write(folder, "plain-socket", "compete", values[2], work, nics=(200, 0))
    write(folder, "braid-net", "compete", values[3], work, nics=(150, 50), **braid)


class CompeteTableTest(unittest.TestCase):
    def test_ratios_shares_and_the_goal(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "mode.txt"), "w") as f:
                f.write("netns: yes\n" + FAIR)
            four(d)
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertTrue(text.startswith("mode: namespaces"), text)
            row = [line for line in text.splitlines() if line.strip().startswith(str(128 << 20))][0].split()
            self.assertEqual(row[1:5], ["0.400", "0.800", "0.200", "0.600"])  # out of place, not in place
            self.assertEqual(row[5:], ["2.00", "3.00"])
            shares = [line for line in text.splitlines() if line.strip().startswith("nic1 share")][0].split()
            self.assertEqual(shares[2:], ["0.00", "0.50", "0.00", "0.25"])
            self.assertIn("braid / NCCL socket = 3.00 (goal >= 1.3: met)", text)
            self.assertNotIn("NOT FAIR", text)

    def test_nccl_socket_over_both_nics_is_an_extra_column(self):
        with tempfile.TemporaryDirectory() as d:
            four(d)
            write(d, "plain-socket-2nic", "quiet", 0.8, nics=(50, 50))
            write(d, "plain-socket-2nic", "compete", 0.4, nics=(150, 50))
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("NCCL-socket-2nic compete", text)
            row = [line for line in text.splitlines() if line.strip().startswith(str(128 << 20))][0].split()
            self.assertEqual(row[5:7], ["0.800", "0.400"])
            self.assertEqual(row[7:], ["2.00", "3.00", "1.50"])  # braid compete / NCCL 2-NIC compete
            self.assertIn("braid / NCCL socket = 3.00", text)  # the verdict stays against one NIC

    def test_goal_not_met_and_loopback_is_not_fair(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "mode.txt"), "w") as f:
                f.write(UNFAIR)
            four(d, values=(0.4, 0.8, 0.2, 0.24))
            rc, text = run(d)
            self.assertEqual(rc, 0, text)  # a missed goal is reported, it is not a failed run
            self.assertIn("= 1.20 (goal >= 1.3: NOT met; NOT FAIR", text)

    def test_net_bench_logs(self):
        with tempfile.TemporaryDirectory() as d:
            four(d, work="net_bench", values=(119.7, 238.5, 59.8, 196.4))
            rc, text = run(d)
            self.assertEqual(rc, 0, text)
            self.assertIn("== net_bench, 2 ranks: MB/s received", text)
            self.assertIn("braid / plain socket = 3.28", text)  # a plain loop, not NCCL
            self.assertNotIn("plugin", text)

    def test_wrong_rows_missing_plugin_and_failures_fail(self):
        for braid, expected in (({"wrong": 2}, "#wrong"), ({"loaded": False}, "NOT LOADED"),
                                ({"rc": 124}, "FAILED: braid-net_quiet_n2_sendrecv.log: rc=124 TIMEOUT")):
            with tempfile.TemporaryDirectory() as d:
                four(d, **braid)
                rc, text = run(d)
                self.assertEqual(rc, 1, text)
                self.assertIn(expected, text)
                if "wrong" in braid:
                    counts = [line for line in text.splitlines() if line.strip().startswith("#wrong")][0].split()
                    self.assertEqual(counts[1:], ["0", "1", "0", "1"])  # one row of two each

    def test_chatter_is_no_share(self):
        with tempfile.TemporaryDirectory() as d:
            four(d)
            write(d, "braid-net", "quiet", 0.8, nics=(0, 0))  # no transfer bytes: ARP at most
            rc, text = run(d)
            shares = [line for line in text.splitlines() if line.strip().startswith("nic1 share")][0].split()
            self.assertEqual(shares[2:], ["0.00", "-", "0.00", "0.25"])

    def test_nothing_to_read_fails(self):
        with tempfile.TemporaryDirectory() as d:
            rc, text = run(d)
            self.assertEqual(rc, 1)
            self.assertIn("no compete logs", text)


if __name__ == "__main__":
    unittest.main()
