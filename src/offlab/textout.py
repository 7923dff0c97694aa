"""Plain-text tables for the terminal and for pipes alike: columns padded to their
widest cell, never truncated or wrapped (a piped `offlab list` must keep every id)."""

from __future__ import annotations

from typing import Iterable, Sequence


def plain_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    body = [tuple(str(cell) for cell in row) for row in rows]
    widths = [max([len(header[i])] + [len(row[i]) for row in body]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()

    return [line(header), line(["-" * w for w in widths])] + [line(row) for row in body]
