"""Unit tests of W5's pure parts: refusals, verdicts, seed 004's comparison.

Run: python3 -m unittest discover -s benches -p 'test_*.py'
"""

import unittest

import fwd_w5


def line(side, workload, value, pair, depth=1.0, digest="d", mismatches=None, verified=10):
    return {"side": side, "workload": workload, "value": value, "pair": pair, "depth": depth,
            "digest": digest, "mismatches": mismatches or {}, "verified": verified,
            "gso_types": {"0": 1}, "over_mtu_without_gso": 0, "copies_per_byte": 2.0,
            "backend_dropped": 0}


def row_of(rows, key):
    label = next(r.label for r in fwd_w5.ROWS if r.key == key)
    return next(r for r in rows if r[0] == label)


class VerdictTest(unittest.TestCase):
    def test_ratio_pairs_runs_and_judges_the_goal(self):
        lines = [line("testpmd", "gro_f8", 10.0, 0, depth=7.0), line("fwd", "gro_f8", 25.0, 0, depth=7.0),
                 line("testpmd", "gro_f8", 20.0, 1, depth=7.0), line("fwd", "gro_f8", 30.0, 1, depth=7.0)]
        row = row_of(fwd_w5.table_rows(lines), "gro_f8")
        self.assertEqual(row[3], "2.00×")  # median of 2.5 and 1.5
        self.assertEqual(row[-1], "yes")

    def test_a_side_that_merges_less_cannot_meet_the_goal(self):
        lines = [line("testpmd", "gro_f8", 10.0, 0, depth=7.0), line("fwd", "gro_f8", 50.0, 0, depth=3.0)]
        self.assertEqual(row_of(fwd_w5.table_rows(lines), "gro_f8")[-1], "**no** (merges less)")

    def test_rows_with_different_frames_or_failed_checks_are_refused(self):
        differ = [line("testpmd", "gso_full", 1.0, 0, digest="a"), line("fwd", "gso_full", 9.0, 0, digest="b")]
        self.assertIn("input digests differ", row_of(fwd_w5.table_rows(differ), "gso_full")[-1])
        bad = [line("testpmd", "gso_full", 1.0, 0),
               line("fwd", "gso_full", 9.0, 0, mismatches={"TCP checksum wrong": 1})]
        self.assertIn("TCP checksum wrong", row_of(fwd_w5.table_rows(bad), "gso_full")[-1])


class Seed004Test(unittest.TestCase):
    def test_gain_is_offload_over_baseline_per_backend(self):
        lines = [line("fwd", "gro_f8", 30.0, 0), line("fwd", "nogro_f8", 20.0, 0)]
        rows = fwd_w5.seed004_rows(lines)
        self.assertEqual(rows, [["GRO, 8 flows", "offlab-fwd", "30.00", "20.00", "+50 %"]])


class CommandsTest(unittest.TestCase):
    def test_testpmd_gets_gro_or_gso_as_its_row_asks(self):
        by_key = {r.key: r for r in fwd_w5.ROWS}
        gro = fwd_w5.testpmd_commands(by_key["gro_f1"])
        self.assertIn("set port 0 gro on", gro)
        self.assertNotIn("gso", gro)
        gso = fwd_w5.testpmd_commands(by_key["gso_partial"])
        self.assertIn("set port 1 gso on", gso)
        self.assertIn(f"set gso segsz {fwd_w5.GSO_SEGMENT}", gso)
        self.assertTrue(gso.rstrip().endswith("start"))


if __name__ == "__main__":
    unittest.main()
