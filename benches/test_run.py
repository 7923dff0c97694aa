"""Unit tests of the runner's pure parts: pairing, verdicts, the document and its history.

Run: python3 -m unittest discover -s benches -p 'test_*.py'
"""

import argparse
import datetime as dt
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import benchdoc
import run


def line(side, workload, value, pair, depth=None, reprime=None, digest="d", allocs=0):
    return {"side": side, "workload": workload, "value": value, "pair": pair, "unit": "Mpps",
            "depth": depth, "reprime_ns_per_pkt": reprime, "digest": digest,
            "heap_allocs": allocs if side == "engine" else None}


class PairingTest(unittest.TestCase):
    def test_ratios_pair_runs_of_the_same_pair(self):
        lines = [line("dpdk", "w", 10.0, 0), line("engine", "w", 30.0, 0),
                 line("dpdk", "w", 20.0, 1), line("engine", "w", 20.0, 1)]
        groups = run.group(lines)
        self.assertEqual(run.pair_ratios(groups[("dpdk", "w")], groups[("engine", "w")]), [3.0, 1.0])

    def test_ratio_without_reprime_removes_each_sides_own_cost(self):
        dpdk = run.Samples([line("dpdk", "w", 20.0, 0, reprime=10.0)])  # 50 ns - 10
        engine = run.Samples([line("engine", "w", 50.0, 0, reprime=5.0)])  # 20 ns - 5
        self.assertEqual(run.without_reprime(dpdk, engine), "2.67×")


class KernelRowsTest(unittest.TestCase):
    def test_each_kernel_row_has_its_ratio_and_bandwidth_fraction(self):
        def csum(workload, value, pair, kernel):
            return {**line("engine", workload, value, pair), "kernel": kernel,
                    "read_gbps": 2 * value, "bw_fraction": 0.5}
        lines = [line("dpdk", "csum_1500", 100.0, 0), line("dpdk_avx2", "csum_1500", 50.0, 0),
                 csum("csum_1500", 300.0, 0, "avx512"), csum("csum_1500_avx2", 150.0, 0, "avx2")]
        rows = run.kernel_rows(run.group(lines))
        self.assertEqual(rows[0], ["1500 B", "avx512 (dispatched)", "300.0", "3.00×", "6.00×",
                                   "600.0", "50 %"])
        self.assertEqual(rows[1][1:5], ["avx2", "150.0", "1.50×", "3.00×"])

    def test_the_avx2_rows_pair_the_avx2_kernel_with_dpdks_avx2_build(self):
        lines = [line("dpdk", "csum_1500", 100.0, 0, digest="c"),
                 line("dpdk_avx2", "csum_1500", 50.0, 0, digest="c"),
                 line("engine", "csum_1500", 300.0, 0, digest="c"),
                 line("engine", "csum_1500_avx2", 120.0, 0, digest="c"),
                 line("engine_avx2", "csum_1500", 90.0, 0, digest="c")]
        rows, problems = run.compared_rows(run.group(lines))
        by_label = {row[0]: row for row in rows}
        native = next(r for label, r in by_label.items() if "1500 B, this CPU" in label)
        avx2 = next(r for label, r in by_label.items() if "1500 B, AVX2" in label)
        self.assertEqual((native[3], native[-1]), ("3.00×", "yes"))
        self.assertEqual((avx2[3], avx2[-1]), ("1.80×", "**no**"))
        self.assertEqual(problems, [])

    def test_the_avx2_engine_side_keeps_only_dispatched_avx2_rows(self):
        def csum(workload, kernel):
            return {**line("engine_avx2", workload, 1.0, 0), "kernel": kernel}
        self.assertTrue(run.is_avx2_dispatch(csum("csum_1500", "avx2")))
        self.assertFalse(run.is_avx2_dispatch(csum("csum_1500_sse2", "sse2")))
        self.assertFalse(run.is_avx2_dispatch(csum("csum_1500_avx2", "avx2")))
        # A CPU without AVX2 ignores the setting and dispatches another kernel.
        self.assertFalse(run.is_avx2_dispatch(csum("csum_1500", "sse2")))

    def test_the_avx2_build_runs_only_the_checksum_rows(self):
        self.assertEqual(run.avx2_only_arg(""), "csum_")
        self.assertEqual(run.avx2_only_arg("csum_1500"), "csum_1500")
        self.assertEqual(run.avx2_only_arg("cs"), "csum_")
        self.assertIsNone(run.avx2_only_arg("gro_"))


class VerdictTest(unittest.TestCase):
    goal = run.Goal("W1", 1.5)

    def test_faster_but_merging_less_does_not_count(self):
        self.assertIn("merges less", run.verdict(self.goal, 3.0, 16.0, 2.0))

    def test_goal_met_and_missed(self):
        self.assertEqual(run.verdict(self.goal, 1.5, 4.0, 4.0), "yes")
        self.assertEqual(run.verdict(self.goal, 1.49, 4.0, 4.0), "**no**")

    def test_digest_mismatch_is_a_problem(self):
        lines = [line("dpdk", "gro_tcp4_f1_burst", 10.0, 0, depth=32.0, digest="a"),
                 line("engine", "gro_tcp4_f1_burst", 20.0, 0, depth=32.0, digest="b")]
        _, problems = run.compared_rows(run.group(lines))
        self.assertEqual(len(problems), 1)

    def test_allocations_are_summed_and_named(self):
        lines = [line("engine", "a", 1.0, 0, allocs=0), line("engine", "b", 1.0, 0, allocs=3)]
        self.assertEqual(run.allocation_summary(lines), (3, ["b"]))


class CapiTest(unittest.TestCase):
    def test_c_side_is_set_beside_rust_and_dpdk(self):
        w = "gro_tcp4_f1_burst"
        lines = [line("dpdk", w, 10.0, 0, depth=32.0), line("engine", w, 40.0, 0, depth=32.0),
                 line("engine_c", w, 30.0, 0, depth=32.0),
                 line("dpdk", w, 10.0, 1, depth=32.0), line("engine", w, 40.0, 1, depth=32.0),
                 line("engine_c", w, 36.0, 1, depth=32.0)]
        rows, problems = run.capi_rows(run.group(lines))
        self.assertEqual(problems, [])
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][4], "0.82×")  # median of 0.75 and 0.9
        self.assertEqual(rows[0][5], "3.30×")  # median of 3.0 and 3.6
        self.assertEqual(rows[0][7:], ["–"] * 7)  # no burst or mbuf side, no counts
        lines.append(line("engine_c_burst", w, 50.0, 0, depth=32.0))
        rows, _ = run.capi_rows(run.group(lines))
        self.assertEqual(rows[0][7:9], ["50.00 Mpps", "1.25×"])

    def test_mbuf_side_is_compared_with_dpdk_and_its_digest_checked(self):
        w = "gso_tcp4_partial"
        lines = [line("dpdk", w, 10.0, 0), line("engine", w, 100.0, 0),
                 line("engine_c", w, 80.0, 0), line("engine_c_mbuf", w, 9.0, 0),
                 line("dpdk", w, 10.0, 1), line("engine", w, 100.0, 1),
                 line("engine_c", w, 80.0, 1), line("engine_c_mbuf", w, 11.0, 1)]
        rows, problems = run.capi_rows(run.group(lines))
        self.assertEqual(problems, [])
        self.assertEqual(rows[0][9:], ["10.00 Mpps", "1.00×", "–", "–", "–"])  # median of 0.9 and 1.1
        counted = {("dpdk", w): 388.4, ("engine_c_mbuf", w): 322.6}
        rows, _ = run.capi_rows(run.group(lines), counted)
        self.assertEqual(rows[0][12:], ["388", "323"])  # both sides' instructions per segment
        lines.append(line("engine_c_mbuf", w, 9.0, 2, digest="other"))
        _, problems = run.capi_rows(run.group(lines))
        self.assertEqual(len(problems), 2)  # against DPDK and against the Rust side
        self.assertIn("engine_c_mbuf", problems[0])

    def test_reprime_costs_are_listed_per_side_that_measured_them(self):
        w = "gro_tcp4_f1_burst"
        lines = [line("dpdk", w, 1.0, 0, reprime=11.0), line("engine_c_mbuf", w, 1.0, 0, reprime=12.0),
                 line("engine", w, 1.0, 0)]
        text = run.reprime_lines(run.group(lines))[0]
        self.assertIn("DPDK 11.0 ns/packet", text)
        self.assertIn("with mbufs (the same mbuf reset as DPDK's) 12.0 ns/packet", text)
        self.assertNotIn("engine 1", text)
        self.assertEqual(run.reprime_lines({}), [])

    def test_c_side_digest_mismatch_and_absence(self):
        w = "csum_1500"
        lines = [line("dpdk", w, 1.0, 0), line("engine_c", w, 1.0, 0, digest="x")]
        _, problems = run.capi_rows(run.group(lines))
        self.assertEqual(len(problems), 1)
        self.assertEqual(run.capi_rows(run.group([line("dpdk", w, 1.0, 0)])), ([], []))

    def test_instruction_counts_run_on_the_mbuf_rows_only_both_sides(self):
        calls = []

        def measure(binary, workload, low, high, extra=()):
            calls.append((binary.name, workload, extra))
            return 100.0

        with mock.patch.object(run.callgrind, "available", return_value=True), \
                mock.patch.object(run.callgrind, "measure", side_effect=measure):
            counts = run.mbuf_instructions({"gro_tcp4_f1_burst", "csum_1500", "gso_tcp4_partial"})
        self.assertEqual(set(counts), {(side, w) for side in ("dpdk", "engine_c_mbuf")
                                       for w in ("gro_tcp4_f1_burst", "gso_tcp4_partial")})
        self.assertIn(("capi_bench_avx2", "gro_tcp4_f1_burst", ("--mbuf-only",)), calls)
        self.assertIn(("dpdk_bench_avx2", "gso_tcp4_partial", ()), calls)
        with mock.patch.object(run.callgrind, "available", return_value=False):
            self.assertEqual(run.mbuf_instructions({"gro_tcp4_f1_burst"}), {})

    def test_instructions_per_op_is_the_difference_of_two_runs(self):
        # 30 extra rounds of 1024 packets, 11,264,000 more instructions: 366.67 each.
        self.assertAlmostEqual(run.callgrind.per_op(161_800_000, 173_064_000, 10, 40, 1024),
                               366.67, places=2)
        with self.assertRaises(ValueError):
            run.callgrind.per_op(1, 2, 40, 10, 1024)

    def test_c_side_allocations_are_not_counted_as_engine(self):
        self.assertEqual(run.allocation_summary([line("engine_c", "a", 1.0, 0)]), (0, []))


class DocumentTest(unittest.TestCase):
    """docs/benchmarks.md keeps the latest table of each series; the table a run replaces
    goes to its run's file in benches/results/ (benches/benchdoc.py)."""

    XEON = dt.datetime(2026, 11, 26, 3, 52)
    EPYC = dt.datetime(2026, 11, 28, 14, 22)

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = Path(tmp.name)
        self.doc = self.root / "docs" / "benchmarks.md"
        self.results = self.root / "benches" / "results"
        self.doc.parent.mkdir(parents=True)
        patcher = mock.patch.multiple(benchdoc, ROOT=self.root, DOC=self.doc, RESULTS=self.results)
        patcher.start()
        self.addCleanup(patcher.stop)

    def section(self, at, cpu, table):
        return "\n".join([benchdoc.stamp(at, cpu), f"Run {at:%Y-%m-%d %H:%M} UTC.", "", table, "",
                          benchdoc.notes_line("engine", at, cpu)])

    def layout(self, engine, w5):
        return (f"intro\n{run.BEGIN}\n{engine}\n{run.END}\nmbuf notes\n"
                f"### Earlier runs\n{benchdoc.HISTORY_BEGIN}\n{benchdoc.HISTORY_END}\n"
                f"W5 intro\n{run.W5_BEGIN}\n{w5}\n{run.W5_END}\nW5 notes\n")

    def test_splice_keeps_the_hand_written_parts(self):
        self.doc.write_text(f"intro\n{run.BEGIN}\nold\n{run.END}\nanalysis\n")
        benchdoc.write_doc("new table", run.BEGIN, run.END)
        self.assertEqual(self.doc.read_text(), f"intro\n{run.BEGIN}\nnew table\n{run.END}\nanalysis\n")
        self.assertFalse(self.results.exists())

    def test_the_replaced_table_goes_to_its_runs_file_and_the_doc_keeps_the_new_one(self):
        old = self.section(self.XEON, "Intel(R) Xeon(R) Processor", "| old | row |")
        w5 = self.section(self.EPYC, "AMD EPYC", "| w5 | row |")
        self.doc.write_text(self.layout(old, w5))
        new = self.section(self.EPYC, "AMD EPYC", "| new | row |")
        archived = benchdoc.write_doc(new, run.BEGIN, run.END, series="engine")
        self.assertEqual(archived, self.results / "engine-2026-11-26-0352-intel-xeon-processor.md")
        kept = archived.read_text()
        self.assertTrue(kept.startswith("# Engine vs DPDK (W1–W4): run of 2026-11-26 03:52 UTC "
                                        "on Intel(R) Xeon(R) Processor\n"))
        self.assertIn("| old | row |", kept)
        self.assertNotIn("<!-- run:", kept)
        text = self.doc.read_text()
        self.assertEqual(benchdoc.between(text, run.BEGIN, run.END), new)
        self.assertNotIn("| old | row |", text)
        # The other sections are where they were, untouched; the index lists the file.
        self.assertEqual(benchdoc.between(text, run.W5_BEGIN, run.W5_END), w5)
        self.assertIn("mbuf notes\n### Earlier runs\n", text)
        self.assertIn("\nW5 notes\n", text)
        self.assertEqual(benchdoc.between(text, benchdoc.HISTORY_BEGIN, benchdoc.HISTORY_END),
                         "- [`engine-2026-11-26-0352-intel-xeon-processor.md`](../benches/results/"
                         "engine-2026-11-26-0352-intel-xeon-processor.md): Engine vs DPDK (W1–W4): "
                         "run of 2026-11-26 03:52 UTC on Intel(R) Xeon(R) Processor")

    def test_the_table_joins_the_notes_written_in_its_runs_file(self):
        old = self.section(self.XEON, "Intel(R) Xeon(R) Processor", "| old | row |")
        self.doc.write_text(self.layout(old, "w5"))
        self.assertIn("`benches/results/engine-2026-11-26-0352-intel-xeon-processor.md`", old)
        self.results.mkdir(parents=True)
        notes = self.results / "engine-2026-11-26-0352-intel-xeon-processor.md"
        notes.write_text("# The 03:52 run\n\nWhy the 1-flow row moved.\n")
        benchdoc.write_doc(self.section(self.EPYC, "AMD EPYC", "| new |"), run.BEGIN, run.END, series="engine")
        kept = notes.read_text()
        self.assertTrue(kept.startswith("# The 03:52 run\n\nWhy the 1-flow row moved.\n"))
        self.assertLess(kept.index("Why the 1-flow row moved."), kept.index("| old | row |"))

    def test_history_keeps_itself_over_several_runs(self):
        self.doc.write_text(self.layout("unstamped table written by hand", "w5"))
        runs = [(dt.datetime(2026, 11, 28, h, 0), "AMD EPYC") for h in (9, 10, 11)]
        for at, cpu in runs:
            benchdoc.write_doc(self.section(at, cpu, f"| run {at:%H} |"), run.BEGIN, run.END, series="engine")
            benchdoc.write_doc(self.section(at, cpu, f"| run {at:%H} |"), run.BEGIN, run.END, series="engine")
        # The unstamped table had no run to be filed under; each stamped one was filed once.
        self.assertEqual(sorted(p.name for p in self.results.iterdir()),
                         ["engine-2026-11-28-0900-amd-epyc.md", "engine-2026-11-28-1000-amd-epyc.md"])
        self.assertEqual((self.results / "engine-2026-11-28-0900-amd-epyc.md").read_text().count("| run 09 |"), 1)
        index = benchdoc.between(self.doc.read_text(), benchdoc.HISTORY_BEGIN, benchdoc.HISTORY_END)
        self.assertLess(index.index("1000-amd-epyc"), index.index("0900-amd-epyc"))  # newest first
        self.assertIn("| run 11 |", benchdoc.between(self.doc.read_text(), run.BEGIN, run.END))

    def test_a_w5_run_that_extends_the_last_table_does_not_file_it(self):
        w5 = self.section(self.EPYC, "AMD EPYC", "| gso row |")
        self.doc.write_text(self.layout("engine", w5))
        more = self.section(self.EPYC + dt.timedelta(minutes=30), "AMD EPYC", "| gso row |\n| pass row |")
        self.assertIsNone(benchdoc.write_doc(more, run.W5_BEGIN, run.W5_END, series="w5", extends_old=True))
        self.assertFalse(self.results.exists())
        benchdoc.write_doc(self.section(self.EPYC + dt.timedelta(hours=2), "AMD EPYC", "| next |"),
                           run.W5_BEGIN, run.W5_END, series="w5")
        self.assertIn("| pass row |", (self.results / "w5-2026-11-28-1452-amd-epyc.md").read_text())

    def test_the_engine_report_is_stamped_with_its_run_and_cpu(self):
        w = "gro_tcp4_f1_burst"
        lines = [line("dpdk", w, 10.0, 0, depth=32.0), line("engine", w, 20.0, 0, depth=32.0)]
        args = argparse.Namespace(pairs=5, seconds=0.3, only="", no_write=False)
        with mock.patch.object(run, "command_field", return_value="AMD EPYC"):
            section = run.report(lines, args, run.ROOT / "target" / "bench")
        stamp = benchdoc.read_stamp(section)
        self.assertEqual(stamp["cpu"], "AMD EPYC")
        name = benchdoc.archive_path("engine", stamp).relative_to(benchdoc.ROOT)
        self.assertIn(f"Notes on this run go in `{name}`", section)
        self.assertRegex(str(name), r"^benches/results/engine-\d{4}-\d\d-\d\d-\d{4}-amd-epyc\.md$")


if __name__ == "__main__":
    unittest.main()


class W5MergeTest(unittest.TestCase):
    def w5(self, workload, at):
        return {"side": "fwd", "workload": workload, "loss": 0.0, "run_at": at}

    def test_a_subset_run_replaces_only_the_rows_it_measured(self):
        old = [self.w5("gro_f1", "08:00"), self.w5("gro_f8", "08:00"), self.w5("nogso", "08:00")]
        new = [self.w5("gro_f8", "19:00")]
        merged = run.merge_w5(old, new)
        self.assertEqual(sorted((l["workload"], l["run_at"]) for l in merged),
                         [("gro_f1", "08:00"), ("gro_f8", "19:00"), ("nogso", "08:00")])

    def test_rows_filter_implies_a_merge(self):
        args = argparse.Namespace(w5_rows="gro_f8", w5_append=False)
        self.assertTrue(run.w5_subset(args))
        self.assertFalse(run.w5_subset(argparse.Namespace(w5_rows="", w5_append=False)))


class RawLinesTest(unittest.TestCase):
    """A --no-write run is a trial: its raw lines never replace the recorded run's, which
    the doc's tables name as theirs."""

    def test_a_no_write_run_keeps_the_recorded_raw_lines(self):
        with tempfile.TemporaryDirectory() as tmp:
            recorded = Path(tmp) / "results" / "last-run.jsonl"
            recorded.parent.mkdir()
            recorded.write_text('{"recorded": true}\n')
            with mock.patch.object(run, "UNRECORDED", Path(tmp) / "target"), \
                    mock.patch.object(run, "ROOT", Path(tmp)):
                run.write_raw([{"trial": 1}], recorded, argparse.Namespace(no_write=True))
                self.assertEqual(recorded.read_text(), '{"recorded": true}\n')
                self.assertEqual((Path(tmp) / "target" / "last-run.jsonl").read_text(), '{"trial": 1}\n')
                run.write_raw([{"kept": 2}], recorded, argparse.Namespace(no_write=False))
                self.assertEqual(recorded.read_text(), '{"kept": 2}\n')


class W5InstructionRowsTest(unittest.TestCase):
    def args(self, **changes):
        base = dict(w5_no_instructions=False, w5_rows="", w5_instr_rows="gro_f8,nogso,gso_partial")
        return argparse.Namespace(**{**base, **changes})

    @unittest.skipUnless(run.w5_instructions.available(), "valgrind is not installed")
    def test_the_counted_rows_are_the_instr_rows_within_the_timed_rows(self):
        self.assertEqual(run.w5_instr_keys(self.args()), ["gro_f8", "nogso", "gso_partial"])
        self.assertEqual(run.w5_instr_keys(self.args(w5_rows="gro,nogro")), ["gro_f8"])

    def test_no_instructions_counts_nothing(self):
        self.assertEqual(run.w5_instr_keys(self.args(w5_no_instructions=True)), [])

    def test_a_count_replaces_only_the_rows_it_counted(self):
        old = [{"workload": "gro_f8", "instructions": 1, "run_at": "03:00"},
               {"workload": "nogso", "instructions": 1, "run_at": "03:00"},
               {"workload": "nogso", "loss": 0.0}]  # a timed line in the wrong file
        new = [{"workload": "nogso", "instructions": 2, "run_at": "06:00"}]
        merged = run.merge_w5(old, new, needs="instructions")
        self.assertEqual([(l["workload"], l["run_at"]) for l in merged],
                         [("gro_f8", "03:00"), ("nogso", "06:00")])
