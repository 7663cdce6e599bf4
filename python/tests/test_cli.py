import json
import os
import pathlib
import tempfile
import unittest

from braid import cli, tools
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
        # A braid with no tools anywhere: no package bin/, no checkout build/, nothing on PATH.
        empty = pathlib.Path(tempfile.mkdtemp())
        saved = (tools.PACKAGE, tools.CHECKOUT, os.environ.get("BRAID_BUILD_DIR"), os.environ["PATH"])
        tools.PACKAGE, tools.CHECKOUT = empty / "braid", empty
        os.environ.pop("BRAID_BUILD_DIR", None)
        os.environ["PATH"] = ""
        try:
            with self.assertRaises(FileNotFoundError) as raised:
                tools.tool("braid-plan")
            self.assertIn("braid-plan is not built", str(raised.exception))
            self.assertEqual(cli.main(["plan", "allreduce"]), 2)
        finally:
            tools.PACKAGE, tools.CHECKOUT = saved[0], saved[1]
            if saved[2] is not None:
                os.environ["BRAID_BUILD_DIR"] = saved[2]
            os.environ["PATH"] = saved[3]

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
