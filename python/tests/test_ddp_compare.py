"""Tests bench/ddp/compare_losses.py's comparison (no torch, no GPU)."""
import importlib.util
import os
import unittest

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "ddp",
                     "compare_losses.py")
_spec = importlib.util.spec_from_file_location("compare_losses", _PATH)
compare_losses = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_losses)

LOSSES = [2.7725887, 2.70123, 2.5518, 2.3001, 2.05, 1.8123]


class CompareLossesTest(unittest.TestCase):
    def test_equal_lists_pass(self):
        result = compare_losses.compare_losses(LOSSES, list(LOSSES))
        self.assertTrue(result.ok)
        self.assertTrue(result.bitwise_equal)
        self.assertEqual(len(result.rows), len(LOSSES))

    def test_reassociation_sized_difference_passes(self):
        result = compare_losses.compare_losses(LOSSES, [v * (1 + 1e-6) for v in LOSSES])
        self.assertTrue(result.ok)
        self.assertFalse(result.bitwise_equal)

    def test_relative_1e_3_difference_fails(self):
        braid = list(LOSSES)
        braid[3] *= 1 + 1e-3
        result = compare_losses.compare_losses(LOSSES, braid)
        self.assertFalse(result.ok)
        self.assertEqual([r[0] for r in result.rows if not r[5]], [3])

    def test_different_lengths_fail(self):
        self.assertFalse(compare_losses.compare_losses(LOSSES, LOSSES[:-1]).ok)
        self.assertFalse(compare_losses.compare_losses(LOSSES[:-1], LOSSES).ok)

    def test_nan_fails(self):
        braid = list(LOSSES)
        braid[1] = float("nan")
        self.assertFalse(compare_losses.compare_losses(LOSSES, braid).ok)
        self.assertFalse(compare_losses.compare_losses([float("nan")], [float("nan")]).ok)

    def test_empty_fails(self):
        self.assertFalse(compare_losses.compare_losses([], []).ok)

    def test_runs_with_disagreeing_ranks_fail(self):
        base = {"losses": LOSSES, "world_size": 4, "ranks_agree": True}
        braid = {"losses": LOSSES, "world_size": 4, "ranks_agree": False}
        self.assertTrue(compare_losses.compare_runs(base, dict(base)).ok)
        self.assertFalse(compare_losses.compare_runs(base, braid).ok)
        self.assertFalse(compare_losses.compare_runs(base, dict(base, world_size=2)).ok)


if __name__ == "__main__":
    unittest.main()
