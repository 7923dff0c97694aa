"""Unit tests of W5's callgrind part: reading a dump, instructions per delivered segment
from two load lengths, the refusals and the table's columns.

Run: python3 -m unittest discover -s benches -p 'test_*.py'
"""

import os
import subprocess
import tempfile
import unittest
from pathlib import Path

import fwd_w5
import w5_instructions
import w5_report
from test_fwd_w5 import line, row_of

# The head and tail of a dump `callgrind_control -d` wrote (valgrind 3.19).
DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4011
cmd:  /usr/bin/dpdk-testpmd --no-huge -m 1536
part: 1

desc: I1 cache:
desc: Timerange: Basic block 2170563012 - 2480931337
desc: Trigger: Client Request: dump

positions: line
events: Ir
summary: 7979686762

ob=(1) /usr/bin/dpdk-testpmd
fn=(1) 0x0000000000049f20
0 12
totals: 7979730242
"""


def counted(side, workload, secs, instructions, payload, digest="d", mismatches=None,
            verified=5):
    return {"side": side, "workload": workload, "config": "tuned", "load_seconds": secs,
            "instructions": instructions, "payload_bytes": payload, "mss": 1448,
            "sent_payload_bytes": payload, "frames": payload // 1448, "depth": 1.0,
            "digest": digest, "verified": verified, "mismatches": mismatches or {}}


class DumpTest(unittest.TestCase):
    def test_the_total_is_the_totals_line(self):
        self.assertEqual(w5_instructions.dump_total(DUMP), 7979730242)

    def test_a_dump_without_totals_falls_back_to_its_summary(self):
        text = DUMP.replace("totals: 7979730242\n", "")
        self.assertEqual(w5_instructions.dump_total(text), 7979686762)

    def test_a_file_that_is_no_dump_is_an_error(self):
        with self.assertRaises(ValueError):
            w5_instructions.dump_total("events: Ir\n")


@unittest.skipUnless(w5_instructions.available(), "valgrind is not installed")
class ControlTest(unittest.TestCase):
    def test_zero_then_dump_counts_only_what_ran_in_between(self):
        """A process under callgrind that works, then waits: a dump holds its work; after
        zeroing, a dump holds nothing (nothing ran in between)."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "callgrind.out")
            work = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo done; read x"
            proc = subprocess.Popen([*w5_instructions.VALGRIND, f"--callgrind-out-file={out}",
                                     "sh", "-c", work], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            try:
                self.assertEqual(proc.stdout.readline(), "done\n")
                w5_instructions.control(proc.pid, "-d")
                w5_instructions.control(proc.pid, "-z")
                w5_instructions.control(proc.pid, "-d")
            finally:
                proc.stdin.write("x\n")
                proc.stdin.close()
                proc.wait(timeout=60)
            worked, waited = (w5_instructions.dump_total(Path(f"{out}.{n}").read_text())
                              for n in (1, 2))
            self.assertGreater(worked, 1_000_000)
            self.assertEqual(waited, 0)


# Lines of `callgrind_annotate --inclusive=yes` on a testpmd dump (valgrind 3.19).
ANNOTATED = """--------------------------------------------------------------------------------
Ir                      file:function
--------------------------------------------------------------------------------
7,979,730,242 (100.0%)  ???:0x0000000000049f20 [/usr/bin/dpdk-testpmd]
  912,345,678 (11.43%)  ???:rte_delay_us_block [/usr/lib/x86_64-linux-gnu/librte_eal.so.23.0]
      123,456 ( 0.00%)  ???:rte_delay_us_block'2 [/usr/lib/x86_64-linux-gnu/librte_eal.so.23.0]
"""


class BusyWaitTest(unittest.TestCase):
    def test_a_functions_inclusive_count_is_read_by_name(self):
        self.assertEqual(w5_instructions.inclusive(ANNOTATED, "rte_delay_us_block"), 912345678)

    def test_a_function_that_never_ran_counts_nothing(self):
        self.assertEqual(w5_instructions.inclusive(ANNOTATED, "rte_delay_us_sleep"), 0)

    def test_busy_waits_are_left_out_of_the_count_per_segment(self):
        low = counted("testpmd", "gso_partial", 2.0, 10**9 + 3000 * 1000, 1000 * 1448)
        high = counted("testpmd", "gso_partial", 6.0, 10**9 + 3000 * 4000 + 5 * 10**8,
                       4000 * 1448)
        high["busy_wait"] = 5 * 10**8
        self.assertEqual(w5_instructions.per_segment([low, high]), 3000)


class PerSegmentTest(unittest.TestCase):
    def test_the_steady_cost_is_the_difference_of_two_load_lengths(self):
        # 1 G instructions of set-up in both; 2000 per segment on top.
        low = counted("fwd", "gro_f8", 2.0, 10**9 + 2000 * 1000, 1000 * 1448)
        high = counted("fwd", "gro_f8", 6.0, 10**9 + 2000 * 4000, 4000 * 1448)
        self.assertEqual(w5_instructions.per_segment([high, low]), 2000)

    def test_segments_are_delivered_payload_over_the_mss(self):
        # A GRO row: 100 frames of 7 merged segments each.
        run = counted("fwd", "gro_f8", 2.0, 0, 700 * 1448)
        run["frames"] = 100
        self.assertEqual(w5_instructions.segments(run), 700)

    def test_one_load_length_gives_no_figure(self):
        runs = [counted("fwd", "gro_f8", 2.0, 5, 1448), counted("fwd", "gro_f8", 2.0, 9, 2896)]
        self.assertIsNone(w5_instructions.per_segment(runs))

    def test_no_more_segments_in_the_longer_run_gives_no_figure(self):
        runs = [counted("testpmd", "nogso", 2.0, 5, 1448), counted("testpmd", "nogso", 6.0, 9, 1448)]
        self.assertIsNone(w5_instructions.per_segment(runs))


class TableTest(unittest.TestCase):
    TIMED = [line("testpmd", "gro_f8", 10.0, 0, depth=7.0), line("fwd", "gro_f8", 20.0, 0, depth=7.0)]

    def instr(self, **fwd_changes):
        fwd = [counted("fwd", "gro_f8", 2.0, 1000 + 1500 * 100, 100 * 1448),
               counted("fwd", "gro_f8", 6.0, 1000 + 1500 * 400, 400 * 1448)]
        for run in fwd:
            run.update(fwd_changes)
        return [counted("testpmd", "gro_f8", 2.0, 2600 * 50, 50 * 1448),
                counted("testpmd", "gro_f8", 6.0, 2600 * 150, 150 * 1448), *fwd]

    def test_both_sides_instructions_per_segment_are_columns_of_the_rows_table(self):
        row = row_of(w5_report.table_rows(self.TIMED, self.instr()), "gro_f8")
        self.assertEqual(row[10:12], ["2,600", "1,500"])

    def test_a_row_not_counted_shows_a_dash(self):
        row = row_of(w5_report.table_rows(self.TIMED), "gro_f8")
        self.assertEqual(row[10:12], ["–", "–"])

    def test_counts_on_other_frames_or_failed_checks_are_refused(self):
        for changes, why in (({"digest": "other"}, "digest differs"),
                             ({"payload_bytes": 0}, "delivered nothing"),
                             ({"mismatches": {"payload": 1}}, "sink found"),
                             ({"verified": 0}, "nothing verified")):
            instr = self.instr(**changes)
            row = row_of(w5_report.table_rows(self.TIMED, instr), "gro_f8")
            self.assertEqual(row[10:12], ["2,600", "–"])
            detail = [r for r in w5_report.instruction_rows(self.TIMED, instr) if r[1] == "offlab-fwd"]
            self.assertIn(why, detail[0][2])

    def test_the_detail_lists_load_lengths_and_segments_per_side(self):
        rows = w5_report.instruction_rows(self.TIMED, self.instr())
        self.assertEqual([r[:5] for r in rows],
                         [["gro_f8", "testpmd", "2,600", "2 / 6", "50 / 150"],
                          ["gro_f8", "offlab-fwd", "1,500", "2 / 6", "100 / 400"]])

    def test_the_default_rows_exist_in_w5(self):
        keys = {r.key for r in fwd_w5.ROWS}
        self.assertTrue(set(w5_instructions.ROWS) <= keys)


if __name__ == "__main__":
    unittest.main()
