"""A view in the report: a title, an introduction, an optional chart and captioned
tables, which Markdown and HTML render alike. The run report's own views and each
study's views (report/studies/) are all Sections."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Section:
    """One titled view of the report."""

    title: str
    intro: str
    tables: tuple[tuple[str, Any], ...]
    """(caption, report.tables.Table)."""
    chart: str | None = None
    """Slug of the section's chart (a key of the report's charts), if it has one."""
