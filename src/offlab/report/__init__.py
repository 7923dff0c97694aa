"""The report wing: every document the lab writes from a store. The run report
(`write.write_report`: `document.build_report_model`, then Markdown and HTML from the
same model, with the views of `views.py` and each study's tables and charts in
`studies/<name>.py`), and the documents across runs: `comparison.py` (two runs),
`history.py` with `history_report.py` (a case across runs), `campaign_report.py`. The
pieces every page is made of are `page.py` and `tables.py`.

May import: studies (each study's plan constants), store, measure, analysis, topology,
vm, hosts and the ground floor. Never run or the command line. This file imports nothing,
so a comparison or a history loads no more of the report than it uses."""
