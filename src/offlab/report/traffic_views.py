"""The NICs' drop and error counters per case (real hosts). Latency and UDP capacity
have views of their own (latency_view.py, capacity_view.py)."""

from __future__ import annotations

from typing import Sequence

from .section import Section
from .model import ProfileRow
from .tables import Table
