"""Who holds a port: the one line a run says when its server cannot bind (a process of
somebody else's, since offlab's own leftovers are killed from the journal first)."""

from __future__ import annotations

import re

from .base import Host

DEFAULT_PORT = 5201
"""The iperf3 server's port (iperf3's own default); a topology's endpoint listens on it
unless told otherwise."""

_USER = re.compile(r'\("([^"]+)",pid=(\d+)')


def port_holder(host: Host, port: int, protocol: str = "tcp") -> str:
    """"iperf3 (pid 4321)" for the listener of `port` on `host`, as `ss` says; "" when
    nothing listens there or `ss` cannot tell."""
    flag = "-Hltnp" if protocol == "tcp" else "-Hlunp"
    try:
        done = host.run(["ss", flag, f"sport = :{port}"], check=False, timeout=10)
    except Exception:  # the holder is a courtesy in an error line: never a second error
        return ""
    found = [f"{name} (pid {pid})" for name, pid in _USER.findall(done.stdout)]
    if found:
        return ", ".join(dict.fromkeys(found))
    return "a process ss does not name" if done.stdout.strip() else ""


def port_taken_text(host: Host, port: int, said: str) -> str:
    """The error of a server that exited at start, with the port's holder when there is one."""
    holder = port_holder(host, port)
    if not holder:
        return said
    return f"port {port} on {host.name} is held by {holder}: end it or choose another port ({said})"
