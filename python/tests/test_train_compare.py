"""Tests bench/train/compare.py's step-time verdict (no torch, no GPU)."""
import importlib.util
import json
import os
import tempfile
import unittest

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "train", "compare.py")
_spec = importlib.util.spec_from_file_location("train_compare", _PATH)
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)


def run(step_ms, preload=""):
    return {"model": "ddp-comm", "world_size": 2, "params": 1, "config": {"dtype": "float32"},
            "steps": 4, "warmup": 0, "losses": [2.0, 1.5, 1.25, 1.0],
            "step_times_s": [step_ms / 1e3] * 4, "ld_preload": preload}


class TrainCompareTest(unittest.TestCase):
    def compare_runs(self, plain_ms, braid_ms):
        d = tempfile.mkdtemp()
        paths = []
        for i, (a, b) in enumerate(zip(plain_ms, braid_ms)):
            for side, ms, pre in (("a", a, ""), ("b", b, "libbraid.so")):
                path = os.path.join(d, f"{side}{i}.json")
                with open(path, "w") as f:
                    json.dump(run(ms, pre), f)
                paths.append(path)
        return compare.compare(paths, label="case")

    def test_a_gap_inside_plains_spread_is_undecided(self):
        r = self.compare_runs([5.0, 6.0], [5.6, 5.7])  # plain spread 1.0 / 5.5 = 18%
        self.assertIn("undecided", r["summary"])
        self.assertAlmostEqual(r["noise"], 1.0 / 5.5)

    def test_a_gap_beyond_plains_spread_is_called(self):
        r = self.compare_runs([5.0, 5.1], [6.0, 6.1])
        self.assertIn("braid slower", r["summary"])
        r = self.compare_runs([6.0, 6.1], [5.0, 5.1])
        self.assertIn("braid faster", r["summary"])

    def test_one_pair_says_the_spread_is_unknown(self):
        r = self.compare_runs([5.0], [6.0])
        self.assertIn("spread unknown", r["summary"])
        self.assertIsNone(r["noise"])


if __name__ == "__main__":
    unittest.main()
