"""The pieces of guests on real hosts that need no server: the journal's new change
kinds (a bridge port's master, an address moved to a bridge) as data and as the shell
lines a server's watchdog runs, and the copy by hash (hosts/files.py) into a directory
through a real shell and sha256sum on this machine."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Sequence

import pytest

from offlab.hosts import changes, files
from offlab.hosts.base import HostError
from offlab.proc import Completed


def test_a_bridge_port_is_undone_by_nomaster_or_its_old_master():
    assert changes.master("eth1", "none", "ofl-br0").undo == (("ip", "link", "set", "dev", "eth1", "nomaster"),)
    assert changes.master("eth1", "br-lan", "ofl-br0").undo[0][-2:] == ("master", "br-lan")


def test_a_moved_address_goes_back_where_it_was_even_when_the_bridge_is_gone():
    moved = changes.address("10.241.0.1/24", "eth1", "ofl-br0")
    script = moved.undo[0][2]
    assert script.startswith("ip addr del 10.241.0.1/24 dev ofl-br0 2>/dev/null; true;")
    assert script.endswith("ip addr replace 10.241.0.1/24 dev eth1")
    added = changes.address("10.214.0.2/24", changes.ABSENT, "eth1")
    assert "replace" not in added.undo[0][2]
    line = changes.shell_line(moved)
    assert "|| echo 'undo failed: address 10.241.0.1/24'" in line
    assert changes.Change.from_json(moved.to_json()) == moved


class Shell:
    """A host that is this machine's shell (the commands really run)."""

    name = "here"

    def run(self, args: Sequence[str], *, timeout: float = 30, check: bool = True,
            input_text: str | None = None, root: bool | None = None) -> Completed:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, input=input_text)
        if check and done.returncode:
            raise HostError(done.stderr)
        return Completed(tuple(args), done.returncode, done.stdout, done.stderr)

    def send_file(self, source: Path, command: Sequence[str], timeout: float = 30) -> Completed:
        with open(source, "rb") as data:
            done = subprocess.run(list(command), stdin=data, capture_output=True, timeout=timeout)
        if done.returncode:
            raise HostError(done.stderr.decode())
        self.sent = getattr(self, "sent", 0) + 1
        return Completed(tuple(command), 0, "", "")


def test_a_file_is_copied_once_by_hash_and_purged(tmp_path):
    source = tmp_path / "vmlinuz"
    source.write_bytes(bytes(range(256)) * 1000)
    root = str(tmp_path / "cache")
    host = Shell()
    path, copied = files.ensure(host, source, root=root)
    assert copied and Path(path).read_bytes() == source.read_bytes()
    assert path == f"{root}/{files.sha256(source)}/vmlinuz"
    assert files.ensure(host, source, root=root) == (path, False) and host.sent == 1
    Path(path).write_bytes(b"tampered")  # a different file under the name: copied again
    assert files.ensure(host, source, root=root)[1] and host.sent == 2
    assert "removed" in files.purge(host, root) and not Path(root).exists()


def test_a_copy_whose_hash_differs_on_arrival_is_refused_and_not_left(tmp_path, monkeypatch):
    source = tmp_path / "initramfs.gz"
    source.write_bytes(b"x" * 5000)
    monkeypatch.setattr(files, "sha256", lambda path: "0" * 64)
    with pytest.raises(HostError, match="expected 0000"):
        files.ensure(Shell(), source, root=str(tmp_path / "cache"))
    assert not list((tmp_path / "cache").rglob("*initramfs*"))


def test_the_confirmation_names_what_the_guests_plan_does_to_each_server():
    from offlab.hosts import hostsfile
    from offlab.run.plan import load
    from offlab.topology.remote_guests import planned_changes
    hosts = hostsfile.parse({
        "sender": {"ssh": "s1", "interface": "eth9", "address": "10.241.0.1", "peer": "10.241.0.2", "app_core": 0},
        "receiver": {"ssh": "s2", "interface": "eth9", "address": "10.241.0.2", "peer": "10.241.0.1", "app_core": 1},
    }, "hosts.toml")
    cases = load("guests").cases
    sender = " ".join(planned_changes("sender", hosts.hosts["sender"], cases))
    receiver = " ".join(planned_changes("receiver", hosts.hosts["receiver"], cases))
    assert "bridge ofl-br0 (TAP ofl-ga in it)" in sender and "eth9 is its port" in sender
    assert "device ofl-vx0 (VNI 42, UDP 4789) over eth9" in sender and "offlab-fwd" in sender
    assert "address 10.214.0.2/24 added on vm2host" in receiver and "10.214.0.2" not in sender
    assert planned_changes("sender", hosts.hosts["sender"], load("quick").cases) == []
