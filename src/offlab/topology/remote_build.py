"""The scenarios a run builds on the servers its session holds (`offlab run --hosts`):
the guests' path (remote_guests.py), the middlebox (middlebox.py, with its nodes on the
servers: remote_middlebox.py) and every other scenario as a pair of hosts (remote.py).
It sits above them, which know nothing of each other's builders."""

from __future__ import annotations

from ..hosts.session import RemoteSession
from ..records import Params
from .base import Topology
from .remote import RemotePair
from .remote_guests import SCENARIO as GUESTS, RemoteGuestPath
from .middlebox import Middlebox
from .remote_middlebox import OnServers


def remote_builder(session: RemoteSession):
    """A `build` for the runner that makes scenarios on the servers the session holds."""

    def build(scenario: str, mtu: int, topology: Params | None = None, **options: object) -> Topology:
        if scenario == GUESTS:
            return RemoteGuestPath(scenario, mtu, topology, session, **options)
        if scenario == Middlebox.scenario:  # the one middlebox, its nodes on the servers
            return Middlebox(mtu, topology, OnServers(session), **options)
        return RemotePair(scenario, mtu, topology, session, **options)

    return build
