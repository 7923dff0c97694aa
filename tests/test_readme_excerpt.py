"""scripts/readme-excerpt.py: the README's excerpt written from a stored run's own report
(its sections by heading, its throughput tables), under a line naming the machine the
run was on, between the README's markers and nowhere else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fixtures.make_store import build_store
from hangguard import HANG_S

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "readme-excerpt.py"
BEGIN = "<!-- excerpt: written by scripts/readme-excerpt.py from a `make demo` run; do not edit by hand -->"
END = "<!-- excerpt end -->"


def _excerpt(run_id: str, store: Path, readme: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), run_id, "--store", str(store), "--readme", str(readme)],
                          capture_output=True, text=True, timeout=HANG_S)


def test_the_excerpt_names_the_machine_and_quotes_the_report(tmp_path):
    store = tmp_path / "offlab.sqlite"
    run_id = build_store(store)
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\nbefore\n\n{BEGIN}\n\nold excerpt\n\n{END}\n\n## after\n")
    done = _excerpt(run_id, store, readme)
    assert done.returncode == 0, done.stderr
    text = readme.read_text()
    assert text.startswith("# title\n\nbefore\n\n" + BEGIN) and text.endswith(END + "\n\n## after\n")
    block = text.split(BEGIN)[1].split(END)[0]
    assert "old excerpt" not in block
    # the machine, from the run's recorded environment (tests/fixtures/make_store.py)
    assert "Fixture CPU @ 3.0GHz, 2 cores, kernel 6.18.0-fixture" in block and run_id in block
    assert "These figures are that machine's" in block and "`offlab report`" in block
    # the report's own sections and a throughput table of its results
    assert "#### Summary" in block and "#### Recommendations" in block
    assert "| Profile |" in block and "Throughput (Gbit/s)" in block
    # run twice, one block: the markers are kept
    assert _excerpt(run_id, store, readme).returncode == 0
    again = readme.read_text()
    assert again.count(BEGIN) == 1 and again.count(END) == 1


def test_a_readme_without_the_markers_is_one_line_and_left_as_it_was(tmp_path):
    store = tmp_path / "offlab.sqlite"
    run_id = build_store(store)
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    done = _excerpt(run_id, store, readme)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "excerpt end" in done.stderr
    assert readme.read_text() == "# no markers\n"


def test_an_unknown_run_is_one_line(tmp_path):
    store = tmp_path / "offlab.sqlite"
    build_store(store)
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\n{END}\n")
    done = _excerpt("no-such-run", store, readme)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "no-such-run" in done.stderr
    assert readme.read_text() == f"{BEGIN}\n{END}\n"


def test_without_a_run_id_the_latest_run_is_quoted(tmp_path):
    store = tmp_path / "offlab.sqlite"
    latest = build_store(store)
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\n{END}\n")
    done = subprocess.run([sys.executable, str(SCRIPT), "--store", str(store), "--readme", str(readme)],
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert f"run `{latest}`" in readme.read_text()
