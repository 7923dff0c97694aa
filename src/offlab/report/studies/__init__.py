"""Each study's views in the run report (the plan side of a study is in studies/<name>/,
its tables and charts here, under the same name): every module has `sections(rows,
report)` and `charts(rows)`. The report walks `STUDY_VIEWS` in the studies' order; a
study that adds no view of its own (offloads) has no module here."""

from __future__ import annotations

from . import dut, guests, middlebox, msgsize, userspace

STUDY_VIEWS = (msgsize, dut, middlebox, userspace, guests)
"""The order of studies.registered(), so the report's sections follow the plan's cases."""
