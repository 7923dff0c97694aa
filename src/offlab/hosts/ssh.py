"""A host reached over SSH: the OpenSSH client, one multiplexed connection per host
(ControlMaster/ControlPersist), every command with a timeout.

Why the OpenSSH client and not a Python SSH library: it reads `~/.ssh/config` as the
user's own `ssh` does — aliases, ProxyJump, IdentityFile, known hosts — so whatever works
at the user's shell works here, and multiplexing makes a command over an open
connection cost a few milliseconds. BatchMode keeps it from ever prompting.

Pinned whatever the config says: no agent forwarding and no port forwardings (a
server offlab drives gets no way back to the controller); host keys are checked as the
user's config says — offlab never turns the check off. When offlab runs as root through
sudo, ssh runs as the user who called sudo, so `offlab run` (root) and `offlab doctor`
(the user) reach the servers with the same identity, keys and known hosts.

A spawned process starts in a session (and so a process group) of its own under sudo
when asked (`[sudo -n] setsid -w sh -c 'echo $$; read go; exec …'`): the pid it reports
is the root process itself, never sudo's; it waits until the journal has recorded it
(journal.py) before it becomes the command, and a stop or a restore kills its whole
process group.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Callable, Protocol, Sequence

from ..proc import DEFAULT_TIMEOUT_S, Completed, ProcessError, run
from ..runscope import RUNTIME_ROOT
from .base import Host, HostError
from .hostsfile import HostSpec
from .journal import STATE_DIR
from .lease import LEASE_LOST_STATUS, Fence
from .privilege import needs_root

SUDO_PASSWORD = "a password is required"
"""sudo -n's own words when the user may not run the command without a password."""
SSH_FAILED = 255
"""ssh's own exit status when it could not run the command at all."""
CONNECT_TIMEOUT_S = 5
PINNED_OPTIONS = ("BatchMode=yes", "ForwardAgent=no", "ForwardX11=no", "ClearAllForwardings=yes",
                  "PermitLocalCommand=no")
"""Options no config can change for offlab's connections."""
AUDIT_LOG = STATE_DIR / "audit.jsonl"
SBIN_PATH = 'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" '
"""Before every command line: a non-root login's PATH (Debian's: /usr/local/bin:/usr/bin:
/bin:/usr/games) lacks the sbin directories, where ethtool (and on some systems ip)
live; the commands that run as the SSH user must find them (sudo uses its secure_path)."""


class HostJournal(Protocol):
    """What writes a change down before the host makes it (journal.py's Journal)."""

    def started(self, pid: int, command: str) -> object: ...

    def ended(self, entry: object) -> None: ...

    def before_link(self, device: str, mtu: int | None, up: bool) -> None: ...

    def before_write(self, path: str, new: str) -> None: ...

    def before_route(self, spec: tuple[str, ...]) -> None: ...

    def after_features(self, device: str) -> None: ...

    def before_neigh(self, address: str, dev: str, mac: str) -> None: ...

    def before_directory(self, path: str) -> object: ...


def ssh_user() -> str | None:
    """The user ssh runs as: the one who called `sudo offlab …`, else None (this one)."""
    user = os.environ.get("SUDO_USER")
    return user if os.geteuid() == 0 and user and user != "root" else None


def ssh_command(ssh_config: str | None, control: Path, destination: str, user: str | None) -> list[str]:
    """The ssh client's arguments up to the destination (pure: tested as is)."""
    prefix = ["runuser", "-u", user, "--"] if user else []
    options = [word for option in (*PINNED_OPTIONS, "ControlMaster=auto", f"ControlPath={control}/%C",
                                   "ControlPersist=60", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                                   "ServerAliveInterval=5", "ServerAliveCountMax=2") for word in ("-o", option)]
    return [*prefix, "ssh", *(["-F", ssh_config] if ssh_config else []), *options, destination]


class AuditLog:
    """Every remote command offlab runs, one JSON line each (beside the journal)."""

    def __init__(self, path: Path = AUDIT_LOG):
        self.path = path

    def add(self, host: str, destination: str, command: str, status: int | None, event: str = "run") -> None:
        """`event`: "run" (a command run to its end, or not at all: status null), or
        "start" and "end" of a spawned process (the end carries its exit status)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": host,
                           "ssh": destination, "command": command, "status": status, "event": event})
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


CONTROL_DIR_MAX = 107 - len("/") - 40 - len(".") - 16
"""The longest control directory ssh can listen in: a unix socket's path holds 107 bytes,
and ssh first makes the socket as `<dir>/<%C: 40 hex>.<16 random characters>`."""


def _control_dir() -> Path:
    """A directory for the connection's control socket: under the run's runtime directory
    when there is one, else its own under /run/offlab; named after this pid either way, so
    `runscope.reclaim_stale` removes it after a kill. A runtime directory too long for a
    socket under it is one line before anything is made (ssh would refuse every command
    with "path too long")."""
    runtime = RUNTIME_ROOT / f"run-{os.getpid()}"
    parent, prefix = (runtime, "ssh-") if runtime.is_dir() else (RUNTIME_ROOT, f"ssh-{os.getpid()}-")
    length = len(str(parent)) + len("/") + len(prefix) + 8  # mkdtemp's 8 random characters
    if length > CONTROL_DIR_MAX:
        longest = CONTROL_DIR_MAX - (length - len(str(RUNTIME_ROOT)))
        raise HostError(f"the runtime directory {RUNTIME_ROOT} is too long for ssh's control socket under "
                        f"it (a unix socket's path holds 107 bytes): set OFFLAB_RUNTIME_DIR to a path of "
                        f"at most {longest} characters")
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


class RemoteProcess:
    """A process started over ssh: `pid` is its pid on the remote host; waiting and
    reading go through the local ssh client that carries its output."""

    def __init__(self, local: subprocess.Popen[str], pid: int, on_end: Callable[[], None] | None = None,
                 on_status: Callable[[int], None] | None = None):
        self.local = local
        self.pid = pid
        self._on_end = on_end
        self._on_status = on_status

    def _ended(self, status: int | None) -> int | None:
        if status is not None and self._on_status is not None:
            on_status, self._on_status = self._on_status, None
            on_status(status)
        if status is not None and self._on_end is not None:
            on_end, self._on_end = self._on_end, None
            on_end()
        return status

    @property
    def stdout(self) -> IO[str] | None:
        return self.local.stdout

    @property
    def stderr(self) -> IO[str] | None:
        return self.local.stderr

    @property
    def returncode(self) -> int | None:
        return self.local.returncode

    def poll(self) -> int | None:
        return self._ended(self.local.poll())

    def wait(self, timeout: float | None = None) -> int:
        status = self.local.wait(timeout)
        self._ended(status)
        return status

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        found = self.local.communicate(timeout=timeout)
        self._ended(self.local.returncode)
        return found


class SshHost(Host):
    def __init__(self, name: str, spec: HostSpec, ssh_config: str | None = None,
                 control_dir: Path | None = None, audit: AuditLog | None = None):
        self.name = name
        self.spec = spec
        self.machine = f"ssh:{spec.ssh}"
        self.audit = audit
        self.journal: HostJournal | None = None
        """Set while a topology journals this host: every spawned process is recorded."""
        self._directories: dict[str, object | None] = {}
        """make_directory's directories still there, each with its journal entry."""
        self.fence: Fence | None = None
        """Set while the run holds the server (session.py): every command carries the token."""
        user = ssh_user()
        self._control = control_dir or _control_dir()
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(self._control, entry.pw_uid, entry.pw_gid)
        self._base = ssh_command(ssh_config, self._control, spec.ssh, user)

    def _remote(self, args: Sequence[str], hand_over: bool = False, command: Sequence[str] | None = None,
                root: bool | None = None) -> str:
        """The command line run on the server: behind the lease's token check while the
        run holds it (lease.py; `hand_over`: a long-running process lets the lock go),
        through `sudo -n` only when the host asks for sudo and `command` (what `args`
        finally runs; `args` itself by default) needs root (privilege.py, or `root` when
        the caller knows: a shell script that only reads)."""
        words = self.fence.wrap(list(args), hand_over) if self.fence is not None else list(args)
        line = shlex.join(words)
        return SBIN_PATH + (f"sudo -n {line}" if self._sudo(command or args, root) else line)

    def _sudo(self, command: Sequence[str], root: bool | None = None) -> bool:
        return self.spec.sudo and (needs_root(command) if root is None else root)

    def run(self, args: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, check: bool = True,
            input_text: str | None = None, root: bool | None = None) -> Completed:
        return self._run(self._remote(args, root=root), args, timeout, check, input_text, self._shown(args, root),
                         root)

    def run_plain(self, args: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> Completed:
        """A command as the login user, without sudo (what is installed, who am I)."""
        return self._run(SBIN_PATH + shlex.join(args), args, timeout, True, None, shlex.join(args))

    def _shown(self, args: Sequence[str], root: bool | None = None) -> str:
        """A command as the audit log shows it: as run, without the lease's prelude
        (lease.py), with the token it carried."""
        fenced = f" [lease {self.fence.token}]" if self.fence is not None else ""
        return ("sudo -n " if self._sudo(args, root) else "") + shlex.join(args) + fenced

    def _run(self, command: str, args: Sequence[str], timeout: float, check: bool,
             input_text: str | None, shown: str, root: bool | None = None) -> Completed:
        try:
            done = run([*self._base, "--", command], timeout=timeout, check=False, input_text=input_text)
        except ProcessError as err:
            if self.audit is not None:
                self.audit.add(self.name, self.spec.ssh, shown, None)
            raise HostError(f"{self.name} ({self.spec.ssh}): `{shlex.join(args)}` {err.reason}; "
                            "check the host answers `ssh " + self.spec.ssh + " true`") from None
        if self.audit is not None:
            self.audit.add(self.name, self.spec.ssh, shown, done.returncode)
        if done.returncode == LEASE_LOST_STATUS and self.fence is not None and self.fence.refused(done.stderr):
            raise self.fence.lose_from(done.stderr)
        if self._sudo(args, root) and done.returncode != 0 and SUDO_PASSWORD in done.stderr:
            raise HostError(f"{self.name} ({self.spec.ssh}): sudo -n asks for a password for `{shlex.join(args)}`; "
                            "let the SSH user run the commands docs/real-hosts.md lists without one (its "
                            "sudoers snippet), or log in as root with sudo = false")
        if done.returncode == SSH_FAILED:
            raise HostError(f"{self.name} ({self.spec.ssh}): ssh failed: {done.stderr.strip()[-200:]}; "
                            f"check that `ssh {self.spec.ssh} true` works without a password")
        if check and done.returncode != 0:
            raise HostError(f"{self.name} ({self.spec.ssh}): `{shlex.join(args)}` exited with status "
                            f"{done.returncode}: {done.stderr.strip()[-200:] or 'no error output'}")
        return Completed(tuple(args), done.returncode, done.stdout, done.stderr)

    def spawn(self, args: Sequence[str], *, capture_stdout: bool = False,  # type: ignore[override]
              keep_stdin: bool = False) -> RemoteProcess:
        """`keep_stdin`: the command reads what is written to the local process's stdin
        after it started (a QEMU guest's agent on its stdio, vm/remote.py)."""
        # A session of its own (setsid -w: ssh still ends when it does); the shell prints
        # its pid on stderr, waits for "go" (sent once the journal has it), then becomes
        # the command. Without "go" (offlab died first) it exits without running it.
        inner = f"echo $$ >&2; read go || exit 97; exec {shlex.join(args)}" + ("" if keep_stdin else " </dev/null")
        remote = self._remote(["setsid", "-w", "sh", "-c", inner], hand_over=True, command=args)
        if self.audit is not None:
            self.audit.add(self.name, self.spec.ssh, self._shown(args), None, "start")
        local = subprocess.Popen([*self._base, "--", remote], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
        assert local.stderr is not None and local.stdin is not None
        first = local.stderr.readline().strip()
        if not first.isdigit():
            local.kill()
            local.wait()
            if self.fence is not None and self.fence.refused(first):
                raise self.fence.lose_from(first)
            raise HostError(f"{self.name} ({self.spec.ssh}): could not start `{shlex.join(args)}`: "
                            f"{first or 'ssh closed'}")
        pid = int(first)
        journal = self.journal
        try:
            entry = journal.started(pid, shlex.join(args)) if journal is not None else None
        except BaseException:
            local.stdin.close()  # no "go": the remote shell exits without running the command
            local.kill()
            local.wait()
            raise
        local.stdin.write("go\n")
        if keep_stdin:
            local.stdin.flush()
        else:
            local.stdin.close()
            local.stdin = None  # communicate() must not flush it again
        audit = self.audit
        return RemoteProcess(local, pid, None if entry is None or journal is None else lambda: journal.ended(entry),
                             None if audit is None else
                             lambda status: audit.add(self.name, self.spec.ssh, self._shown(args), status, "end"))

    def stop(self, process: subprocess.Popen[str], grace_s: float = 2.0) -> None:  # type: ignore[override]
        """TERM the remote process group, KILL it after the grace period, then reap the ssh.
        On a server whose lease is lost only the local ssh is ended: the server's watchdog
        killed the group when it restored, and the pid may be another run's by now."""
        if process.poll() is None and self.fence is not None and self.fence.lost is not None:
            local = process.local if isinstance(process, RemoteProcess) else process
            local.kill()
            local.wait(timeout=grace_s)
        if process.poll() is None:
            self.run(["kill", "-s", "TERM", "--", f"-{process.pid}"], check=False, timeout=10)
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.run(["kill", "-s", "KILL", "--", f"-{process.pid}"], check=False, timeout=10)
                local = process.local if isinstance(process, RemoteProcess) else process
                local.kill()
                local.wait(timeout=grace_s)
                process.poll()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    # --- changes, each journaled first when a journal is attached -----------------------

    def set_link(self, device: str, *, mtu: int | None = None, up: bool = True) -> None:
        if self.journal is not None:
            self.journal.before_link(device, mtu, up)
        super().set_link(device, mtu=mtu, up=up)

    def set_features(self, device: str, pairs: Sequence[str]) -> Completed:
        """The features as read back after the change are journaled as the value set, so
        a later restore sees whether someone changed them since (drift); while the
        change is in flight the journal holds no value set (journal.before_features)."""
        if self.journal is not None:
            self.journal.before_features(device)
        done = super().set_features(device, pairs)
        if self.journal is not None:
            self.journal.after_features(device)
        return done

    def write_file(self, path: str, text: str, check: bool = True) -> bool:
        if self.journal is not None:
            self.journal.before_write(path, text)
        return super().write_file(path, text, check)

    def sysctl(self, key: str, value: str) -> None:
        self.write_file("/proc/sys/" + key.replace(".", "/"), f"{value}\n")

    def make_directory(self, prefix: str) -> str:
        """A private directory under the server's /tmp for a run's files, journaled
        before it is made: a run killed while it exists leaves it to `offlab restore`
        or the watchdog, as it leaves a device. The name is chosen here, not by
        mktemp, so the journal holds it before the directory is there."""
        path = f"/tmp/{prefix}.{secrets.token_hex(6)}"
        entry = self.journal.before_directory(path) if self.journal is not None else None
        self.run(["mkdir", "-m", "700", "--", path], timeout=20)
        self._directories[path] = entry
        return path

    def remove_directory(self, path: str) -> None:
        """A directory of make_directory's, removed and out of the journal."""
        self.run(["rm", "-rf", "--", path], check=False, timeout=10)
        entry = self._directories.pop(path, None)
        if entry is not None and self.journal is not None:
            self.journal.ended(entry)

    def add_route(self, network: str, gateway: str) -> None:
        if self.journal is not None:
            self.journal.before_route((network, "via", gateway))
        super().add_route(network, gateway)

    def send_file(self, source: Path, command: Sequence[str], timeout: float = 300.0) -> Completed:
        """Run `command` on the host with the bytes of the local file `source` on its
        stdin (a copy over the same connection, hosts/files.py)."""
        remote = self._remote(command)
        with open(source, "rb") as data:
            done = subprocess.run([*self._base, "--", remote], stdin=data, capture_output=True, timeout=timeout)
        if self.audit is not None:
            self.audit.add(self.name, self.spec.ssh, self._shown(command), done.returncode)
        stderr = done.stderr.decode(errors="replace").strip()
        if done.returncode != 0:
            raise HostError(f"{self.name} ({self.spec.ssh}): could not copy {source.name} "
                            f"(`{shlex.join(command)}` exited with status {done.returncode}: {stderr[-200:]})")
        return Completed(tuple(command), done.returncode, done.stdout.decode(errors="replace"), stderr)

    def log(self, message: str) -> None:
        """A line in the server's syslog (`journalctl -t offlab`): what offlab did as root
        there outside a run's journal (a restore, a purge)."""
        self.run(["logger", "-t", "offlab", "--", message], check=False, timeout=10)

    def close(self) -> None:
        """End the multiplexed connection and remove its socket's directory."""
        run([*self._base[:-1], "-O", "exit", self.spec.ssh], check=False, timeout=10)
        shutil.rmtree(self._control, ignore_errors=True)

    def __repr__(self) -> str:
        return f"SshHost({self.name!r}, {self.spec.ssh!r})"
