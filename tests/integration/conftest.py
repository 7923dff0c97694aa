"""Integration tests build real namespaces: they need root, iperf3 and ethtool. They
share fixed names (rigs, journals, /var/lib/offlab) and measure: one at a time, never
in pytest-xdist workers (`make test` runs them in a pytest of their own; tests/conftest.py
refuses `-n` on them)."""

import os
import shutil

import pytest


def pytest_collection_modifyitems(items):
    missing = [tool for tool in ("iperf3", "ethtool", "ip") if shutil.which(tool) is None]
    reason = ("needs root" if os.geteuid() != 0 else
              f"needs {', '.join(missing)} (make setup)" if missing else None)
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
