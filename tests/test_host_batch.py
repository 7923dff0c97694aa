"""hosts/batch.py: several reads in one command give what each gave on its own."""

import subprocess

import pytest

from offlab.hosts import batch
from offlab.hosts.base import HostError
from offlab.proc import Completed
from tests.fixtures.recording_host import RecordingHost
from tests.fixtures.this_machine import ThisMachine

READS = [
    ["uname", "-r"],
    ["ethtool", "-S", "lo"],  # fails: lo has no statistics (status and stderr kept)
    ["cat", "/proc/sys/net/core/somaxconn", "/nonexistent"],  # stdout and stderr, status 1
    ["cat", "/proc/sys/kernel/ostype"],
    ["grep", "-c", "x", "/dev/null"],  # prints "0", exits 1
    ["true"],  # no output at all
]


def test_each_read_as_if_it_ran_alone():
    together = batch.run_reads(ThisMachine(), READS)
    for command, done in zip(READS, together, strict=True):
        alone = subprocess.run(command, capture_output=True, text=True, timeout=10)
        assert (done.args, done.returncode, done.stdout, done.stderr) == \
               (tuple(command), alone.returncode, alone.stdout, alone.stderr), command


class Silent(RecordingHost):
    """A host whose command printed nothing (a script cut short)."""

    def run(self, args, **_):
        self.calls.append(list(args))
        return Completed(tuple(args), 0, "", "")


def test_one_command_on_the_host():
    host = Silent("r", lambda args: "")
    with pytest.raises(HostError, match="no output for `uname -r`"):  # a cut-short script is an error
        batch.run_reads(host, [["uname", "-r"]])
    assert host.calls == [["sh", "-c", batch.script([["uname", "-r"]]), "offlab-reads"]]


def test_a_change_is_not_a_read():
    host = RecordingHost("r", lambda args: "")
    with pytest.raises(ValueError, match="needs root"):
        batch.run_reads(host, [["cat", "/proc/net/dev"], ["ethtool", "-K", "ofl-x", "gro", "off"]])
    assert host.calls == []


def test_files_read_in_one_command_as_each_alone():
    host = RecordingHost("r", lambda args: f"contents of {args[1]}")
    assert host.read_files(["/proc/1/comm", "/proc/1/net/tcp"]) == {
        "/proc/1/comm": "contents of /proc/1/comm\n", "/proc/1/net/tcp": "contents of /proc/1/net/tcp\n"}
    assert len(host.calls) == 1
    here = ThisMachine()
    with pytest.raises(FileNotFoundError, match="/nonexistent"):
        here.read_files(["/proc/self/comm", "/nonexistent"])
    assert here.read_files(["/proc/sys/kernel/ostype"]) == {"/proc/sys/kernel/ostype": here.read_file(
        "/proc/sys/kernel/ostype")}
