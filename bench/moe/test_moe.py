"""Checks of bench/moe/tokens.py and compare.py (no torch needed): python3 bench/moe/test_moe.py"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import tokens  # noqa: E402


class TokensTest(unittest.TestCase):
    def test_counts_sum_to_tokens_and_repeat(self):
        for skew in (0.0, 1.2, 2.0):
            c = tokens.split_counts(1, 4, 1000, skew, 3)
            self.assertEqual(sum(c), 1000)
            self.assertEqual(c, tokens.split_counts(1, 4, 1000, skew, 3))

    def test_skew_concentrates_on_one_expert_for_everyone(self):
        world, n = 8, 20000
        hot = tokens.expert_order(world, 2.0, 5)[0]
        for src in range(world):
            c = tokens.split_counts(src, world, n, 2.0, 5)
            self.assertEqual(max(range(world), key=lambda e: c[e]), hot)
            self.assertGreater(c[hot], 0.5 * n)  # Zipf(2) over 8: the top expert has ~0.62
        balanced = tokens.split_counts(0, world, n, 0.0, 5)
        self.assertLess(max(balanced), 1.2 * n / world)

    def test_values_fit_bfloat16_exactly(self):
        top = max(tokens.row_value(s, d, i, c) for s in range(8) for d in range(8) for i in range(50) for c in range(10))
        self.assertLess(top + 7, 256)

    def test_receiver_knows_what_every_sender_sends(self):
        world, n = 4, 500
        for me in range(world):
            got = tokens.expected_received(me, world, n, 1.2, 2)
            self.assertEqual([s for s, _ in got], list(range(world)))
            self.assertEqual([k for _, k in got], [tokens.split_counts(s, world, n, 1.2, 2)[me] for s in range(world)])


def run_json(wrong=0, preload="", libraries=(), ms=1.0):
    return {"world_size": 2, "config": {"tokens": 8, "hidden": 4, "warmup": 1}, "ld_preload": preload,
            "libraries": list(libraries),
            "results": [{"skew": 0.0, "wrong": wrong, "checked": 64, "dispatch_ms_all": [9.0, ms, ms],
                         "combine_ms_all": [9.0, ms, ms]}]}


class CompareTest(unittest.TestCase):
    def compare(self, *runs):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i, run in enumerate(runs):
                paths.append(os.path.join(d, f"{i}.json"))
                with open(paths[-1], "w") as f:
                    json.dump(run, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = compare.main(paths)
            return rc, out.getvalue()

    def test_exact_runs_pass_and_report_the_ratio(self):
        rc, out = self.compare(run_json(ms=2.0), run_json(preload="/x/libbraid.so", libraries=["/x/libbraid.so"], ms=1.0))
        self.assertEqual(rc, 0, out)
        self.assertIn("| 2.000 |", out)  # plain 4 ms / braid 2 ms, warm-up step left out

    def test_a_wrong_value_or_a_missing_preload_fails(self):
        rc, _ = self.compare(run_json(), run_json(wrong=1, preload="/x/libbraid.so", libraries=["/x/libbraid.so"]))
        self.assertEqual(rc, 1)
        rc, _ = self.compare(run_json(), run_json(preload="/x/libbraid.so", libraries=[]))
        self.assertEqual(rc, 1)


if __name__ == "__main__":
    unittest.main()
