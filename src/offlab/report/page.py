"""The pieces every page the lab writes is made of — the run report, a comparison, a
history, a campaign: a table as Markdown or as HTML, a chart as a data URI, and the
self-contained HTML page with the report's inline style. Kept apart from the run
report's assembly (markdown.py, html.py, views.py) so that a comparison or a history
loads none of it."""

from __future__ import annotations

import base64
import html

from .cells import Table

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;
 margin:0;background:#f6f7f9}
main{max-width:1360px;margin:0 auto;padding:24px 32px 64px;background:#fff}
h1{font-size:24px;margin:0 0 4px} h2{font-size:19px;margin:36px 0 10px;
 border-bottom:2px solid #e3e6ec;padding-bottom:4px} h3{font-size:15px;margin:22px 0 8px}
.sub{color:#5a6270;margin:0 0 16px}
table{border-collapse:collapse;margin:8px 0 14px;font-size:12.5px}
th,td{border:1px solid #dde1e8;padding:3px 8px;white-space:nowrap}
th{white-space:normal;vertical-align:bottom}
th{background:#eef1f5;font-weight:600} td.num{text-align:right;font-variant-numeric:tabular-nums}
table.facts td:first-child{font-weight:600;background:#f8f9fb}
table.facts td{white-space:normal}
tr:nth-child(even) td{background:#fafbfc}
.rec li{margin:3px 0} .good{color:#17803d;font-weight:600} .bad{color:#b42318;font-weight:600}
.muted{color:#667085} .status-complete{color:#17803d} .status-interrupted,.status-failed{color:#b42318}
details{margin:6px 0} summary{cursor:pointer;font-weight:600}
.warn{border-left:4px solid #f0a30a;background:#fffaf0;padding:6px 12px;margin:8px 0}
.advice{color:#6b4e00;font-style:italic}
img.chart{max-width:100%;border:1px solid #e3e6ec;margin:6px 0}
nav a{margin-right:12px} code{background:#f1f3f6;padding:1px 4px;border-radius:3px}
.scroll{overflow-x:auto}
"""


def escape(text: object) -> str:
    """`text` as HTML text or attribute value."""
    return html.escape(str(text), quote=True)


def html_table(table: Table, css_class: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.header)
    body = []
    for row in table.rows:
        cells = "".join(
            f"<td>{escape(c)}</td>" if i < table.align_left else f'<td class="num">{escape(c)}</td>'
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    cls = f' class="{css_class}"' if css_class else ""
    head_row = f"<thead><tr>{head}</tr></thead>" if any(table.header) else ""
    return f'<div class="scroll"><table{cls}>{head_row}<tbody>{"".join(body)}</tbody></table></div>'


def data_uri(png: bytes) -> str:
    """A PNG as a data: URI, so a page carries its charts."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def markdown_table(table: Table) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    align = [":---" if i < table.align_left else "---:" for i in range(len(table.header))]
    lines = [
        "| " + " | ".join(cell(h) for h in table.header) + " |",
        "| " + " | ".join(align) + " |",
    ]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def page(title: str, body: str) -> str:
    """A complete self-contained document around ``body`` (already escaped HTML), with
    the report's inline style; shared by other single-page outputs (comparisons)."""
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
