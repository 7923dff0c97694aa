"""Two stand-ins for a user's servers, hosta and hostb: two servers of the session's pool
(sshpool.py: each a namespace running its own OpenSSH server with throwaway keys,
reached from the root namespace over a management veth), joined by a test link. The lab
talks to them only as `ssh hosta` / `ssh hostb` would.

Each `ssh_lab()` is a fresh rig as far as a test can tell (a new test link, a new ssh
config and hosts file, nothing of an earlier rig running on the servers, every sshd up)
but the servers themselves start once per session."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


from offlab.hosts import LocalNamespace, connect_veth
from offlab.hosts.journal import JOURNAL_DIR
from offlab.hosts.server import SERVER_DIR
from offlab.proc import run

from .sshpool import SERVERS, pool

SSHD = "/usr/sbin/sshd"
MGMT = {name: (SERVERS[name].root_dev, "mgmt0", SERVERS[name].root_addr, SERVERS[name].address)
        for name in ("a", "b")}
"""Root-side device, the server's end, addresses (sshpool.py's servers a and b)."""
WATCHDOG_S = 10
"""The servers restore themselves 10 s after the controller's last heartbeat (60 s by
default): short, so a test of it waits little."""
TEST = {"a": ("ofl-ta0", "10.241.0.1"), "b": ("ofl-tb0", "10.241.0.2")}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "real-hosts.md"
SUDOERS = Path("/etc/sudoers.d")


def sudoers_snippet(user: str, password: bool = False) -> str:
    """docs/real-hosts.md's sudoers snippet for `user`, as a user would paste it (the rig
    tests the documented one); `password`: without NOPASSWD (sudo -n then refuses)."""
    found = re.search(r"```text\n(# /etc/sudoers\.d/offlab.*?)```", DOCS.read_text(), re.S)
    assert found, "docs/real-hosts.md has no sudoers snippet"
    text = re.sub(r"^USER ", f"{user} ", found.group(1), flags=re.M)
    return text.replace("NOPASSWD: ", "") if password else text


@dataclass
class SshLab:
    folder: Path
    servers: dict[str, LocalNamespace] = field(default_factory=dict)
    sshd: dict[str, subprocess.Popen] = field(default_factory=dict)
    """The pool's sshd processes (one dict for every rig: a killed and restarted sshd is
    seen by all)."""

    NAMES = ("a", "b")
    """The pool's servers this rig wires, and (as `host<name>`) their ssh aliases."""
    user: str | None = None
    """A non-root login user (ofl-…) the rig creates, with `sudo = true` in the hosts file
    and docs/real-hosts.md's sudoers snippet (removed by `stop`); None: log in as root."""

    @property
    def ssh_config(self) -> Path:
        return self.folder / "ssh_config"

    @property
    def hosts_file(self) -> Path:
        return self.folder / "hosts.toml"

    def start(self) -> "SshLab":
        servers = pool()
        for name in self.NAMES:
            self.servers[name] = servers.server(name)
        self.sshd = servers.sshd
        self.wire()
        if self.user is not None:
            self.add_user()
        self.ssh_config.write_text("\n".join(servers.ssh_entry(self.alias(name), name, self.user or "root")
                                             for name in self.NAMES))
        self.ssh_config.chmod(0o600)
        self.hosts_file.write_text(self.hosts_toml())
        return self

    @property
    def sudoers(self) -> Path:
        return SUDOERS / (self.user or "")

    def add_user(self) -> None:
        """The login user: no password (`*`: key only, not locked), its home and
        authorized key under the rig's folder, the documented sudoers snippet."""
        assert self.user is not None and self.user.startswith("ofl-")
        self.remove_user()  # a killed session's
        home = self.folder / "home"
        (home / ".ssh").mkdir(parents=True)
        os.chmod(self.folder, 0o711)
        run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh", "--password", "*",
             "--user-group", self.user])
        (home / ".ssh" / "authorized_keys").write_text(pool().public_key)
        run(["chown", "-R", f"{self.user}:{self.user}", str(home)])
        self.set_sudoers()

    def set_sudoers(self, password: bool = False) -> None:
        """The user's sudoers file (checked by visudo before it is in place)."""
        assert self.user is not None
        draft = self.folder / "sudoers"
        draft.write_text(sudoers_snippet(self.user, password))
        run(["visudo", "-c", "-q", "-f", str(draft)])
        draft.chmod(0o440)
        shutil.move(draft, self.sudoers)

    @property
    def uid(self) -> int:
        assert self.user is not None
        return pwd.getpwnam(self.user).pw_uid

    def remove_user(self) -> None:
        assert self.user is not None and self.user.startswith("ofl-")
        self.sudoers.unlink(missing_ok=True)
        try:
            pwd.getpwnam(self.user)
        except KeyError:
            return
        run(["userdel", self.user])

    def alias(self, name: str) -> str:
        return f"host{name}"

    def wire(self) -> None:
        """The rig's test links (removed by `unwire`)."""
        connect_veth(self.servers["a"], TEST["a"][0], self.servers["b"], TEST["b"][0])
        for name in ("a", "b"):
            device, address = TEST[name]
            self.servers[name].add_address(device, address, 24)
            self.servers[name].set_link(device)

    def test_devices(self) -> dict[str, tuple[str, ...]]:
        """Per server, the test devices `wire` made there."""
        return {name: (TEST[name][0],) for name in ("a", "b")}

    def hosts_toml(self) -> str:
        # Both "servers" are namespaces of one kernel: said, as a user with such a setup must.
        sudo = "sudo = true\n" if self.user is not None else ""
        return (f'ssh_config = "{self.ssh_config}"\nsame_kernel = true\nwatchdog_s = {WATCHDOG_S}\n\n'
                '[sender]\nssh = "hosta"\ninterface = "ofl-ta0"\naddress = "10.241.0.1"\n'
                f'peer = "10.241.0.2"\napp_core = 0\n{sudo}\n'
                '[receiver]\nssh = "hostb"\ninterface = "ofl-tb0"\naddress = "10.241.0.2"\n'
                f'peer = "10.241.0.1"\napp_core = 1\n{sudo}')

    def kill_sshd(self, name: str) -> None:
        """The host goes away: its sshd and every session it carries (the next rig starts
        it again)."""
        pool().kill_sshd(name)

    def stop(self) -> None:
        """Everything the rig's tests started on its servers ended, its test devices (with
        their addresses, routes and upper devices) deleted, its files removed; the servers
        stay for the next rig."""
        servers = pool()
        servers.end_sessions(self.NAMES)
        if self.user is not None:
            self.remove_user()
        for name, devices in self.test_devices().items():
            for device in devices:
                if self.servers[name].has_link(device):
                    self.servers[name].ip("link", "del", device)
        shutil.rmtree(self.folder, ignore_errors=True)


def ssh_lab(user: str | None = None) -> SshLab:
    """`user`: log in as that (non-root, ofl-) user with sudo = true; root by default."""
    return SshLab(Path(tempfile.mkdtemp(prefix="offlab-sshlab-")), user=user).start()


@contextmanager
def clean_ssh_lab(servers, user: str | None = None) -> Iterator[SshLab]:
    """A rig on the session's servers (`servers`: the `ssh_servers` fixture, which skips
    without openssh-server), for a fixture of any scope: it starts only where no journal
    of real hosts and no server hold of an earlier test is left, and when it ends the
    rig is stopped and what a failed test left (journals, the hold) is removed for the
    next one. `user` as for ssh_lab."""
    assert servers is pool()
    assert not list(JOURNAL_DIR.glob("*.json")), "a journal of real hosts is left"
    assert not Path(SERVER_DIR).exists(), "a server hold of an earlier test is left"
    started = ssh_lab(user)
    try:
        yield started
    finally:
        started.stop()
        for journal in JOURNAL_DIR.glob("*.json"):
            journal.unlink()
        shutil.rmtree(SERVER_DIR, ignore_errors=True)
