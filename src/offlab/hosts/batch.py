"""Several read-only commands on a host as ONE command: one SSH round trip (or one call
of a guest's agent) instead of one each. On a loaded machine a command over a
multiplexed SSH connection, behind the lease's token check (lease.py), costs 100-200 ms
of wall time; a counters snapshot of three servers was thirteen of them, twice per
sample.

The commands run one after the other in a POSIX shell script on the host, each with its
own exit status, stdout and stderr, as if each had been run on its own; the script
prints them in parts (`@offlab-part STATUS INDEX`, the stdout, `@offlab-stderr`, the
stderr) that `split` takes apart. Only reads: the script runs as the SSH user (no sudo),
so a command that needs root is refused here, before anything runs.
"""

from __future__ import annotations

import shlex
from typing import Protocol, Sequence

from ..proc import Completed
from .errors import HostError
from .privilege import needs_root

PART = "@offlab-part"
STDERR = "@offlab-stderr"
PER_COMMAND_S = 10.0
"""The time each command had when it ran on its own."""


def script(commands: Sequence[Sequence[str]]) -> str:
    """The shell script that runs `commands` in order and prints each one's part."""
    lines = ['err=$(mktemp) || exit 1', 'trap \'rm -f "$err"\' EXIT']
    for index, command in enumerate(commands):
        lines.append(f'out=$({shlex.join(command)} 2>"$err"); echo "{PART} $? {index}"; '
                     f'printf \'%s\\n\' "$out"; echo "{STDERR}"; cat "$err"')
    return "\n".join(lines) + "\n"


def split(commands: Sequence[Sequence[str]], text: str, host: str = "") -> list[Completed]:
    """The script's output → one Completed per command (status, stdout, stderr); a
    command whose part is missing (the script was cut short) is an error."""
    parts: dict[int, tuple[int, list[str], list[str]]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == PART and words[1].isdigit() and words[2].isdigit():
            status, out, err = int(words[1]), [], []
            parts[int(words[2])] = (status, out, err)
            current = out
        elif line == STDERR and parts and current is not None:
            current = parts[max(parts)][2]
        elif current is not None:
            current.append(line)
    missing = [shlex.join(command) for index, command in enumerate(commands) if index not in parts]
    if missing:
        raise HostError(f"{host}: no output for `{'`, `'.join(missing)}`: {text.strip()[-200:]!r}")
    return [Completed(tuple(command), parts[index][0], _text(parts[index][1]), _text(parts[index][2]))
            for index, command in enumerate(commands)]


class ReadHost(Protocol):
    """What a batch needs of a host (base.Host has it; Host.read_files batches through here)."""

    name: str

    def run(self, args: Sequence[str], *, timeout: float = ..., check: bool = ...,
            input_text: str | None = ..., root: bool | None = ...) -> Completed: ...


def run_reads(host: ReadHost, commands: Sequence[Sequence[str]]) -> list[Completed]:
    """Run read-only `commands` on `host` in one command; each result as `host.run(…,
    check=False)` of that command alone would have given it (the caller judges the
    statuses). An error of the batch itself (ssh failed, the lease lost) raises as
    `host.run` does."""
    for command in commands:
        if needs_root(command):
            raise ValueError(f"`{shlex.join(command)}` needs root: not for a batch of reads")
    done = host.run(["sh", "-c", script(commands), "offlab-reads"], timeout=PER_COMMAND_S * max(1, len(commands)),
                    root=False)
    return split(commands, done.stdout, host.name)


def require(read: Completed, where: str) -> Completed:
    """`read` itself when it succeeded; a failed read that every host can do (the /proc
    files, `ip link`) is an error, named with the command and its status."""
    if read.returncode != 0:
        raise HostError(f"{where}: `{shlex.join(read.args)}` exited with status {read.returncode}: "
                        f"{read.stderr.strip()[-200:] or 'no error output'}")
    return read


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n" if lines and lines != [""] else ""
