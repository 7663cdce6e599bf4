import json
import os
import tempfile
import unittest

from braid import cli
from braid.sizes import format_size, parse_size


class SizeTest(unittest.TestCase):
    def test_units(self):
        self.assertEqual(parse_size("8"), 8)
        self.assertEqual(parse_size("1K"), 1024)
        self.assertEqual(parse_size("64M"), 64 << 20)
        self.assertEqual(parse_size("1G"), 1 << 30)
        self.assertEqual(parse_size("2gb"), 2 << 30)

    def test_rejects_garbage(self):
        for bad in ("", "K", "12Q", "-3"):
            with self.assertRaises(ValueError):
                parse_size(bad)

    def test_format_round_trip(self):
        for n in (1, 1000, 1024, 3 << 20, 1 << 30):
            self.assertEqual(parse_size(format_size(n)), n)


class CliTest(unittest.TestCase):
    def test_missing_tool_is_a_clear_error(self):
        old = os.environ.get("BRAID_BUILD_DIR")
        os.environ["BRAID_BUILD_DIR"] = tempfile.mkdtemp()
        try:
            path = os.environ["PATH"]
            os.environ["PATH"] = ""
            try:
                self.assertEqual(cli.main(["plan", "allreduce"]), 2)
            finally:
                os.environ["PATH"] = path
        finally:
            if old is None:
                del os.environ["BRAID_BUILD_DIR"]
            else:
                os.environ["BRAID_BUILD_DIR"] = old

    def test_plot_reads_rows(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib not installed")
        d = tempfile.mkdtemp()
        src = os.path.join(d, "r.json")
        with open(src, "w") as f:
            json.dump({"rows": [{"collective": "allreduce", "size": 1024, "algbw": 1.0},
                                {"collective": "allreduce", "size": 2048, "algbw": 2.0}]}, f)
        out = os.path.join(d, "r.png")
        self.assertEqual(cli.main(["plot", src, "-o", out]), 0)
        self.assertTrue(os.path.getsize(out) > 0)


if __name__ == "__main__":
    unittest.main()
