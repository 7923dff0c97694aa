"""hosts/channel.py: a host's commands through one long-lived shell session give what
each gave in a session of its own, and an SshHost sends a run's commands through one."""

import os
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from offlab.hosts.base import HostError
from offlab.hosts.channel import Channel, ChannelClosed, ChannelTimeout
from offlab.hosts.hostsfile import HostSpec
from offlab.hosts.ssh import AuditLog, SshHost

LOGIN = ["sh", "-c", 'echo "a login rc file talking"; exec sh']
"""The far end as an ssh session to it starts: a login that prints something first."""

LINES = [
    "uname -r",
    "cat /proc/sys/net/core/somaxconn /nonexistent",  # stdout and stderr, status 1
    "printf 'no newline at the end'",
    "printf '\\000\\001binary\\n'",
    "grep -c x /dev/null",  # prints "0", exits 1
    "true",  # no output at all
    "cat",  # reads its stdin: gets nothing, and must not eat the channel's own input
    "echo '@offlab-done 1 0 0 0'; exit 7",  # a line that looks like the framing
]


@pytest.fixture()
def channel(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # a killed session's directory stays here
    found = Channel(LOGIN)
    yield found
    found.close()


def test_each_command_as_if_it_ran_in_a_session_of_its_own(channel):
    for line in LINES:
        alone = subprocess.run(["sh", "-c", line], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        done = channel.try_run(line, None, 10)
        assert done is not None
        assert (done.status, done.stdout, done.stderr) == \
               (alone.returncode, alone.stdout.decode(errors="replace"), alone.stderr.decode(errors="replace")), line


def test_input_reaches_the_command_as_given(channel):
    text = "a line\n$HOME `date` 'quoted' \"double\"\nOFFLAB_INPUT_x\n"
    assert channel.try_run("cat", text, 10).stdout == text
    # Input a here-document would change (no final newline) is not the channel's.
    assert channel.try_run("cat", "no newline", 10) is None


def test_a_command_past_its_time_ends_the_channel_and_the_next_opens_another(channel):
    with pytest.raises(ChannelTimeout):
        channel.try_run("sleep 5", None, 0.3)
    assert channel.try_run("echo again", None, 10).stdout == "again\n"


def test_a_session_that_closes_under_a_command_says_so(channel):
    # $$ in the command's subshell is the session's shell itself.
    with pytest.raises(ChannelClosed) as closed:
        channel.try_run("echo 'ssh: connection lost' >&2; kill -s KILL $$", None, 10)
    assert not isinstance(closed.value, ChannelTimeout)
    assert channel.try_run("echo back", None, 10).stdout == "back\n"


def test_a_busy_channel_sends_the_other_thread_the_one_off_way(channel):
    started, results = threading.Event(), []

    def long_command():
        started.set()
        results.append(channel.try_run("sleep 3; echo long", None, 10))

    thread = threading.Thread(target=long_command)
    thread.start()
    started.wait()
    while not channel._busy.locked():  # the long command holds the channel
        time.sleep(0.001)
    assert channel.try_run("echo short", None, 10) is None
    thread.join()
    assert results[0].stdout == "long\n"


def test_a_channel_that_cannot_open_is_none():
    broken = Channel(["sh", "-c", "echo 'ssh: no route to host' >&2; exit 255"])
    assert broken.try_run("true", None, 5) is None


FAKE_SSH = """#!/bin/sh
# Stands in for ssh: each invocation is one session on the "server" (this machine),
# whose login shell runs the command line after "--".
case " $* " in *" -O "*) exit 0;; esac
echo session >> "$OFFLAB_TEST_SESSIONS"
while [ "$1" != "--" ]; do shift; done; shift
exec sh -c "$1"
"""


@pytest.fixture()
def one_session_per_ssh(tmp_path, monkeypatch) -> Path:
    """`ssh` on PATH is FAKE_SSH; the file it returns gets a line per session."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ssh"
    fake.write_text(FAKE_SSH)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    sessions = tmp_path / "sessions"
    sessions.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OFFLAB_TEST_SESSIONS", str(sessions))
    monkeypatch.delenv("SUDO_USER", raising=False)
    return sessions


def test_a_hosts_commands_go_through_one_session(one_session_per_ssh, tmp_path):
    """Before the channel every command was an SSH session of its own: 20 here."""
    spec = HostSpec("sender", "fake-server", "lo", "10.0.0.1", "10.0.0.2", 0)
    audit = AuditLog(tmp_path / "audit.jsonl")
    host = SshHost("tx", spec, control_dir=tmp_path / "control", audit=audit)
    (tmp_path / "control").mkdir(exist_ok=True)
    try:
        for _ in range(10):
            assert host.read_file("/proc/sys/kernel/ostype") == Path("/proc/sys/kernel/ostype").read_text()
            assert host.run(["cat"], input_text="journal\n").stdout == "journal\n"
        with pytest.raises(HostError, match="exited with status 1"):
            host.run(["cat", "/nonexistent"])
    finally:
        host.close()
    assert one_session_per_ssh.read_text().count("session") == 1
    assert len(audit.path.read_text().splitlines()) == 21  # still one audit line per command
