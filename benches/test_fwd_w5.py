"""Unit tests of W5's pure parts: testpmd's configuration, the ABBA order, loss and
per-side costs, refusals, verdicts, seed 004's comparison.

Run: python3 -m unittest discover -s benches -p 'test_*.py'
"""

import tempfile
import unittest
from pathlib import Path
from unittest import mock  # only to point the reservation at a file

import fwd_w5
import w5_report
import w5_testpmd


def line(side, workload, value, pair, depth=1.0, digest="d", mismatches=None, verified=10,
         loss=0.0):
    return {"side": side, "workload": workload, "value": value, "pair": pair, "depth": depth,
            "digest": digest, "mismatches": mismatches or {}, "verified": verified,
            "gso_types": {"0": 1}, "over_mtu_without_gso": 0, "copies_per_byte": 2.0,
            "backend_dropped": 0, "loss": loss, "offered_gbps": value, "mss": 1448,
            "backend_ns_per_segment": 100.0, "source_busy_share": 0.2,
            "sink_busy_share": 0.4, "config": "tuned"}


def row_of(rows, key):
    label = next(r.label for r in fwd_w5.ROWS if r.key == key)
    return next(r for r in rows if r[0] == label)


ROW = {r.key: r for r in fwd_w5.ROWS}


class RunsTest(unittest.TestCase):
    def test_each_row_is_listed_with_its_own_run_time_and_command(self):
        lines = [dict(line("fwd", "gro_f8", 1.0, 0), run_at="19:24", command="run.py --w5-rows gro_f8"),
                 dict(line("fwd", "nogso", 1.0, 0), run_at="19:24", command="run.py --w5-rows gro_f8"),
                 dict(line("fwd", "gro_f1", 1.0, 0), run_at="07:53", command="run.py")]
        listed = w5_report.runs(lines).splitlines()
        self.assertEqual(listed, ["- gro_f1: 07:53, `run.py`",
                                  "- gro_f8, nogso: 19:24, `run.py --w5-rows gro_f8`"])


class VerdictTest(unittest.TestCase):
    def test_ratio_pairs_runs_and_judges_the_goal(self):
        lines = [line("testpmd", "gro_f8", 10.0, 0, depth=7.0), line("fwd", "gro_f8", 25.0, 0, depth=7.0),
                 line("testpmd", "gro_f8", 20.0, 1, depth=7.0), line("fwd", "gro_f8", 30.0, 1, depth=7.0)]
        row = row_of(w5_report.table_rows(lines), "gro_f8")
        self.assertEqual(row[3], "2.00×")  # median of 2.5 and 1.5
        self.assertEqual(row[5], "2")
        self.assertEqual(row[-1], "yes")

    def test_a_side_that_merges_less_cannot_meet_the_goal(self):
        lines = [line("testpmd", "gro_f8", 10.0, 0, depth=7.0), line("fwd", "gro_f8", 50.0, 0, depth=3.0)]
        self.assertEqual(row_of(w5_report.table_rows(lines), "gro_f8")[-1], "**no** (merges less)")

    def test_a_side_that_merges_more_is_not_at_equal_depth(self):
        lines = [line("testpmd", "gro_f1", 10.0, 0, depth=19.07), line("fwd", "gro_f1", 50.0, 0, depth=26.67)]
        self.assertEqual(row_of(w5_report.table_rows(lines), "gro_f1")[-1],
                         "**no** (merges more: not at equal depth)")

    def test_a_side_that_loses_payload_cannot_meet_the_goal(self):
        lines = [line("testpmd", "gso_full", 10.0, 0), line("fwd", "gso_full", 50.0, 0, loss=0.03)]
        row = row_of(w5_report.table_rows(lines), "gso_full")
        self.assertEqual(row[6:8], ["0.0 %", "3.0 %"])
        self.assertEqual(row[-1], "**no** (loses 3.0 %)")

    def test_rows_with_different_frames_or_failed_checks_are_refused(self):
        differ = [line("testpmd", "gso_full", 1.0, 0, digest="a"), line("fwd", "gso_full", 9.0, 0, digest="b")]
        self.assertIn("input digests differ", row_of(w5_report.table_rows(differ), "gso_full")[-1])
        bad = [line("testpmd", "gso_full", 1.0, 0),
               line("fwd", "gso_full", 9.0, 0, mismatches={"TCP checksum wrong": 1})]
        self.assertIn("TCP checksum wrong", row_of(w5_report.table_rows(bad), "gso_full")[-1])


class PlacementTest(unittest.TestCase):
    def test_pairs_are_grouped_by_where_both_runs_had_the_vcpus(self):
        def at(side, pair, value, rtt):
            return dict(line(side, "gro_f8", value, pair), vcpu_rtt_ns=rtt)
        lines = [at("testpmd", 0, 10.0, [80, 90]), at("fwd", 0, 20.0, [85, 95]),     # near: 2.0
                 at("testpmd", 1, 10.0, [330, 340]), at("fwd", 1, 11.0, [335, 328]),  # far: 1.1
                 at("testpmd", 2, 10.0, [80, 340]), at("fwd", 2, 30.0, [85, 90]),     # moved: mixed
                 at("testpmd", 3, 10.0, [330, 340]), at("fwd", 3, 19.0, [85, 90]),    # one each: mixed
                 at("testpmd", 4, 10.0, [None, None]), at("fwd", 4, 99.0, [85, 90])]  # no reading
        self.assertEqual(row_of(w5_report.placement_rows(lines), "gro_f8")[1:],
                         ["2.00× (1)", "1.10× (1)", "2.45× (2)"])

    def test_rows_without_readings_are_left_out(self):
        lines = [line("testpmd", "gro_f8", 10.0, 0), line("fwd", "gro_f8", 20.0, 0)]
        self.assertEqual(w5_report.placement_rows(lines), [])


class MeasuredTest(unittest.TestCase):
    RESULT = {"seconds": 1.0, "mss": 1000, "sent_payload_bytes": 1_000_000,
              "payload_bytes": 900_000, "gbps": 0.0072, "merge_depth": 1.0,
              "backend_cpu_share": 1.0, "load_cpu_share": 1.0, "source_busy_seconds": 0.25,
              "sink_busy_seconds": 0.5, "input_digest": "d", "verified": 1, "mismatches": {},
              "gso_types": {}, "over_mtu_without_gso": 0, "source_negotiated": [],
              "sink_negotiated": []}

    def test_loss_is_offered_payload_the_sink_did_not_get(self):
        backend = {"copied": None, "delivered": None, "dropped": 3}
        out = fwd_w5.measured("fwd", ROW["gso_full"], 0, self.RESULT, backend, "offlab-fwd")
        self.assertAlmostEqual(out["loss"], 0.1)
        self.assertAlmostEqual(out["offered_gbps"], 0.008)
        # 900 segments in 1 s on one whole core: 1 ms each.
        self.assertAlmostEqual(out["backend_ns_per_segment"], 1e9 / 900)
        self.assertEqual((out["source_busy_share"], out["sink_busy_share"]), (0.25, 0.5))

    def test_the_vcpu_round_trip_before_and_after_is_kept_with_the_run(self):
        backend = {"copied": None, "delivered": None, "dropped": 0}
        out = fwd_w5.measured("fwd", ROW["gso_full"], 0, self.RESULT, backend, "offlab-fwd",
                              (63.0, 331.0))
        self.assertEqual(out["vcpu_rtt_ns"], [63.0, 331.0])

    def test_without_the_probe_binary_no_round_trip_is_recorded(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertIsNone(fwd_w5.vcpu_rtt(Path(tmp) / "offlab-vcpu-rtt"))

    def test_the_round_trip_is_the_median_of_the_probes_measurements(self):
        with tempfile.TemporaryDirectory() as tmp:
            probe = Path(tmp) / "offlab-vcpu-rtt"
            probe.write_text('#!/bin/sh\necho \'{"round_trip_ns": [90, 340, 85, 88, 500]}\'\n')
            probe.chmod(0o755)
            self.assertEqual(fwd_w5.vcpu_rtt(probe), 90)


class OrderTest(unittest.TestCase):
    def test_pairs_alternate_which_backend_runs_first(self):
        self.assertEqual([fwd_w5.order(p) for p in range(4)],
                         [("testpmd", "fwd"), ("fwd", "testpmd")] * 2)

    def test_a_row_with_a_wide_spread_is_seen_as_wide(self):
        lines = [line("testpmd", "gro_f8", 10.0, 0), line("fwd", "gro_f8", 10.0, 0),
                 line("testpmd", "gro_f8", 10.0, 1), line("fwd", "gro_f8", 20.0, 1)]
        self.assertAlmostEqual(w5_report.spread(lines, "gro_f8"), 2.0)
        self.assertGreater(w5_report.spread(lines, "gro_f8"), fwd_w5.WIDE_SPREAD)


class Seed004Test(unittest.TestCase):
    def test_gain_and_guest_cpu_per_gbps_with_and_without_backend_offload(self):
        lines = [line("fwd", "gro_f8", 30.0, 0), line("fwd", "nogro_f8", 20.0, 0)]
        rows = w5_report.seed004_rows(lines)
        # source busy 0.2 of a core: per Gbit/s 0.2/30 and 0.2/20; sink 0.4/30, 0.4/20.
        self.assertEqual(rows, [["GRO, 8 flows", "offlab-fwd", "30.00", "20.00", "+50 %",
                                 "0.7 %", "1.0 %", "1.3 %", "2.0 %"]])


class TestpmdTest(unittest.TestCase):
    def test_gro_and_gso_rows_get_rx_checksum_offload_and_their_engine(self):
        gro = fwd_w5.testpmd_setup(ROW["gro_f1"]).commands(gro=True, gso=False)
        self.assertIn("port config 0 rx_offload tcp_cksum on", gro)
        self.assertIn("port config 0 rx_offload udp_cksum on", gro)
        self.assertIn("set port 0 gro on", gro)
        self.assertNotIn("gso", gro)
        gso = fwd_w5.testpmd_setup(ROW["gso_partial"]).commands(gro=False, gso=True)
        self.assertIn("set port 1 gso on", gso)
        self.assertIn(f"set gso segsz {w5_testpmd.GSO_SEGMENT}", gso)
        self.assertTrue(gso.rstrip().endswith("start"))

    def test_rows_measured_faster_with_tx_retry_feed_the_retry_commands(self):
        for key in ("gso_partial", "gso_full", "pass_tso", "gro_f64", "nogso", "vxlan_nogro_f8"):
            typed = fwd_w5.testpmd_setup(ROW[key]).commands(ROW[key].gro, ROW[key].gso)
            self.assertIn("set burst tx delay 10 retry 256\nset fwd csum retry\n", typed)
        for key in ("gro_f1", "gro_f8", "nogro_f8"):
            typed = fwd_w5.testpmd_setup(ROW[key]).commands(ROW[key].gro, ROW[key].gso)
            self.assertNotIn("retry", typed)
            self.assertIn("set fwd csum\n", typed)

    def test_a_gso_burst_fits_testpmds_output_array(self):
        argv = fwd_w5.testpmd_setup(ROW["gso_partial"]).argv(["A", "B"], "p")
        burst = int(next(a for a in argv if a.startswith("--burst=")).split("=")[1])
        segments = -(-65535 // (w5_testpmd.GSO_SEGMENT - 66))  # a 64 KiB frame's segments
        self.assertLessEqual(burst * segments, 2048)  # GSO_MAX_PKT_BURST, testpmd.h

    def test_gro_rows_merge_over_bursts_of_64(self):
        argv = fwd_w5.testpmd_setup(ROW["gro_f8"]).argv(["A", "B"], "p")
        self.assertIn("--burst=64", argv)

    def test_gso_rows_hold_a_64_kib_frame_in_one_mbuf(self):
        argv = fwd_w5.testpmd_setup(ROW["gso_full"]).argv(["A", "B"], "p")
        self.assertIn("--mbuf-size=65535", argv)
        self.assertFalse(any("ext-buffer" in a for a in argv))

    def test_dpdks_own_pass_is_io_forwarding_with_legacy_offload_flags(self):
        setup = w5_testpmd.IO_PASS
        self.assertIn("set fwd io", setup.commands(gro=False, gso=False))
        self.assertNotIn("csum set", setup.commands(gro=False, gso=False))
        self.assertTrue(all("legacy-ol-flags=1" in a for a in setup.argv(["A", "B"], "p")
                            if a.startswith("net_vhost")))

    def test_hugepages_are_used_only_when_mounted(self):
        self.assertIn("--no-huge", fwd_w5.testpmd_setup(ROW["gro_f1"]).argv(["A", "B"], "p"))
        argv = fwd_w5.testpmd_setup(ROW["gro_f1"], "/mnt/h").argv(["A", "B"], "p")
        self.assertNotIn("--no-huge", argv)
        self.assertNotIn("-m", argv)  # EAL grows into the pages as the pools need them
        self.assertEqual(argv[argv.index("--huge-dir") + 1], "/mnt/h")

    def test_the_page_reservation_and_mount_are_given_back(self):
        with tempfile.TemporaryDirectory() as tmp:
            pages = Path(tmp) / "nr_hugepages"  # stands in for /proc/sys/vm/nr_hugepages
            pages.write_text("3\n")
            with mock.patch.object(w5_testpmd, "NR_HUGEPAGES", pages):
                with w5_testpmd.hugepages(10) as mount:
                    self.assertEqual(pages.read_text(), "13")
                    # as root the hugetlbfs mount is real; otherwise none is offered
                    if mount is not None:
                        self.assertIn(mount, Path("/proc/mounts").read_text())
            self.assertEqual(pages.read_text(), "3")
            if mount is not None:
                self.assertFalse(Path(mount).exists())


if __name__ == "__main__":
    unittest.main()
