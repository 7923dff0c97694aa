"""Which commands offlab runs on a server as root (through `sudo -n`, with `sudo = true`
in the hosts file) and which as the SSH user: root only for what the kernel refuses to
anyone else — changing links, addresses, routes, neighbours and qdiscs (`ip`, `tc`),
offloads, rings and channels (`ethtool -K/-G/-L/-C`), sysctls and /sys files, killing
a process group offlab started, offlab's own state under /var/lib/offlab, QEMU and
offlab-fwd (TAP, AF_PACKET). Reads run as the user, and the traffic tools that listen
on the network (iperf3, irtt, sockperf, offlab-udpload) never run as root, whatever
the caller asked. docs/real-hosts.md lists the same with a sudoers snippet.

The table is the one place that decides; a caller that knows better passes `root=`.
"""

from __future__ import annotations

from typing import Sequence

TRAFFIC_TOOLS = frozenset({"iperf3", "irtt", "sockperf", "offlab-udpload"})
"""Network-facing: never as root."""
ROOT_TOOLS = frozenset({"offlab-fwd", "qemu-system-x86_64", "qemu-system-aarch64", "kill", "rm", "mkdir",
                        "touch", "tee", "mv", "chmod", "chown", "setsid", "sh"})
"""Always as root: the datapath and guests (raw sockets, TAP, KVM), kills of offlab's
process groups, offlab's state directory, the server-side scripts (hold, watchdog,
journal copy, undo; `sh -c`)."""
READ_ONLY = frozenset({"cat", "ls", "grep", "id", "sha256sum", "test", "tail", "stat", "uname", "nproc",
                       "readlink", "true", "logger", "mktemp", "ps", "pgrep"})
_CHANGES = frozenset({"add", "del", "delete", "set", "replace", "change", "flush", "append", "prepend"})
_ETHTOOL_SETS = frozenset({"-K", "--features", "--offload", "-G", "--set-ring", "-L", "--set-channels", "-C",
                           "--coalesce", "-A", "--pause", "-s", "--change", "-X", "--set-rxfh-indir", "-N",
                           "--config-ntuple", "-U"})
_WRAPPERS = {"taskset": 2, "env": 0, "nice": 0, "timeout": 1}
"""Words before the command itself: `taskset -c CORE cmd` (2 arguments), …"""


def command_name(args: Sequence[str]) -> str:
    """The program a command line runs, past taskset and the like ("/usr/bin/iperf3" → "iperf3")."""
    index = 0
    while index < len(args) and args[index].rsplit("/", 1)[-1] in _WRAPPERS:
        index += 1 + _WRAPPERS[args[index].rsplit("/", 1)[-1]]
    return args[index].rsplit("/", 1)[-1] if index < len(args) else ""


def needs_root(args: Sequence[str]) -> bool:
    name = command_name(args)
    words = set(args)
    if name in TRAFFIC_TOOLS:
        return False
    if name in ROOT_TOOLS:
        return True
    if name == "ss":  # the processes holding sockets (-p) are shown to root only
        return any(word.startswith("-") and not word.startswith("--") and "p" in word for word in args[1:])
    if name in READ_ONLY:
        return False
    if name in ("ip", "tc", "bridge"):  # -n and netns enter another namespace: setns needs root
        return bool(words & _CHANGES) or "-n" in words or "netns" in words
    if name == "ethtool":
        return bool(words & _ETHTOOL_SETS)
    if name == "sysctl":
        return "-w" in words or any("=" in word for word in args[1:])
    return True  # unknown: as before (root), so that nothing that needs it fails
