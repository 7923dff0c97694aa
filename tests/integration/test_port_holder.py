"""A port somebody else already holds when offlab's iperf3 server starts: the failure is
one line naming the process that holds it (found with `ss`), not iperf3's bare
"exiting"."""

from __future__ import annotations

import pytest

from offlab.hosts import LocalNamespace
from offlab.hosts.ports import port_holder
from offlab.proc import ProcessError
from offlab.measure.traffic import IperfServer


def test_a_taken_port_names_its_holder():
    host = LocalNamespace("porth").create()
    try:
        host.set_link("lo")
        stranger = host.spawn(["iperf3", "-s", "-p", "5299"])
        try:
            for _ in range(200):
                if port_holder(host, 5299):
                    break
                stranger.poll()
            assert port_holder(host, 5299) == f"iperf3 (pid {stranger.pid})"
            assert port_holder(host, 5298) == ""
            with pytest.raises(ProcessError) as caught:
                with IperfServer(host, "127.0.0.1", 0, port=5299):
                    pass
            said = str(caught.value)
            assert "\n" not in said and f"port 5299 on porth is held by iperf3 (pid {stranger.pid})" in said
        finally:
            host.stop(stranger)
    finally:
        host.remove()
