"""The lease's token check (hosts/lease.py) run by the real POSIX shell and flock(1) on a
run directory in a temporary folder, and the drift comparison of values the kernel
prints in another form. The whole lease on live sshd servers:
tests/integration/test_host_lease.py."""

import subprocess
import sys

import pytest

from offlab import proc
from offlab.hosts import changes
from offlab.hosts.base import Host
from offlab.hosts.hostsfile import HostSpec
from offlab.hosts.journal import Identity, Journal, Mirror
from offlab.hosts.journal import forget
from offlab.hosts.base import HostError
from offlab.hosts.lease import LEASE_LOST_STATUS, Fence, LeaseLost
from hangguard import HANG_S


def _held(tmp_path, token: str):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "owner").write_text(f"{token}\nboot\n")
    return run_dir


def _sh(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=10)


def test_a_command_of_the_holder_runs_behind_the_lock(tmp_path):
    run_dir = _held(tmp_path, "run A")
    fence = Fence(str(run_dir), "run A", "rx")
    done = _sh(fence.wrap(["sh", "-c", "echo ran; exit 3"]))
    assert done.returncode == 3 and done.stdout == "ran\n"


@pytest.mark.parametrize("owner", ["run B", None])
def test_a_command_of_another_token_is_refused_and_does_not_run(tmp_path, owner):
    run_dir = _held(tmp_path, owner) if owner else tmp_path / "run"
    fence = Fence(str(run_dir), "run A", "rx")
    marker = tmp_path / "touched"
    done = _sh(fence.wrap(["touch", str(marker)]))
    assert done.returncode == LEASE_LOST_STATUS and fence.refused(done.stderr)
    assert not marker.exists()
    lost = fence.lose_from(done.stderr)
    assert f"{owner or 'nobody'} holds" in lost.reason
    with pytest.raises(LeaseLost):  # once lost, nothing more is even sent
        fence.wrap(["true"])


def test_a_spawned_command_lets_the_lock_go(tmp_path):
    """A long-running process must not keep the watchdog from the lock."""
    run_dir = _held(tmp_path, "run A")
    fence = Fence(str(run_dir), "run A", "rx")
    done = _sh(fence.wrap(["sh", "-c", f"flock -n {run_dir}.lock echo free"], hand_over=True))
    assert done.returncode == 0 and done.stdout == "free\n"
    held = _sh(fence.wrap(["sh", "-c", f"flock -n {run_dir}.lock echo free"]))
    assert held.returncode == 1  # a plain command holds it until it ends


@pytest.mark.parametrize("path, written, read", [
    ("/sys/class/net/eth0/queues/rx-0/rps_cpus", "4", "00000000,00000004"),
    ("/proc/irq/30/smp_affinity", "f", "0000000f"),
    ("/proc/sys/net/ipv4/tcp_rmem", "4096 131072 6291456", "4096\t131072\t6291456"),
])
def test_a_value_read_back_in_the_kernels_form_is_the_value_set(path, written, read):
    change = changes.file(path, "0", written)
    assert changes.normal(change, read) == changes.normal(change, written)
    assert changes.normal(change, "00000000,00000008") != changes.normal(change, written)


def test_forget_drops_one_servers_journals_and_names_what_may_be_left(tmp_path):
    (tmp_path / "k.json").write_text(
        '{"spec": {"role": "sender", "ssh": "old1"}, "ssh_config": null, "identity": {}, "version": 2, '
        '"changes": [{"kind": "mtu", "target": "eth9", "old": "1500", "new": "9000", "undo": []}]}')
    with pytest.raises(HostError, match="no journal of 'other'"):
        forget("other", tmp_path)
    lines = forget("old1", tmp_path)
    assert len(lines) == 1 and "mtu eth9" in lines[0] and not (tmp_path / "k.json").exists()


def test_a_neighbour_entry_offlab_replaces_is_put_back_as_it_was():
    """`ip neigh replace` overwrites an operator's static entry: the change records it
    and the undo puts it back instead of deleting it."""
    shown = [{"dst": "10.0.0.2", "dev": "eth1", "lladdr": "02:AA:00:00:00:01", "state": ["PERMANENT"]}]
    old = changes.neigh_value(shown)
    assert old == "02:aa:00:00:00:01 PERMANENT"
    change = changes.neigh("10.0.0.2", "eth1", "02:bb:00:00:00:02", old)
    assert change.undo == (("ip", "neigh", "replace", "10.0.0.2", "lladdr", "02:aa:00:00:00:01", "dev", "eth1",
                            "nud", "permanent"),)
    fresh = changes.neigh("10.0.0.2", "eth1", "02:bb:00:00:00:02", changes.neigh_value([]))
    assert fresh.undo == (("ip", "neigh", "del", "10.0.0.2", "dev", "eth1"),)


def test_the_confirmation_names_the_host_wide_socket_limits_a_udp_plan_raises():
    from offlab.run.confirm import planned_changes
    from offlab.hosts.hostsfile import parse
    from offlab.run.plan import parse as parse_plan
    hosts = parse({"sender": {"ssh": "s1", "interface": "e1", "address": "192.0.2.1", "peer": "192.0.2.2", "app_core": 0},
                   "receiver": {"ssh": "s2", "interface": "e1", "address": "192.0.2.2", "peer": "192.0.2.1",
                                "app_core": 1}}, "h.toml")
    plan = ('name = "u"\nruns = 1\nduration = 1.0\nmtus = [1500]\nscenarios = ["bare"]\ntraffic = ["{}"]\n'
            'sequences = ["all-on"]\n')
    udp = planned_changes(hosts, parse_plan(plan.format("udp1472"), "p").cases, False)
    assert all("net.core.rmem_max and net.core.wmem_max raised" in line for line in udp)
    tcp = planned_changes(hosts, parse_plan(plan.format("tcp"), "p").cases, False)
    assert not any("rmem_max" in line for line in tcp)


@pytest.mark.parametrize("args, root", [
    (["taskset", "-c", "2", "iperf3", "-s", "-p", "5201"], False),
    (["/var/lib/offlab/cache/ab/offlab-udpload", "recv"], False),
    (["irtt", "server", "-b", "10.0.0.2:2112"], False),
    (["ethtool", "-k", "eth1"], False),
    (["ethtool", "-K", "eth1", "tso", "off"], True),
    (["ip", "-j", "link", "show"], False),
    (["ip", "link", "set", "dev", "eth1", "mtu", "1400"], True),
    (["ip", "neigh", "replace", "10.0.0.2", "lladdr", "02:00:00:00:00:01", "dev", "eth1"], True),
    (["tee", "/proc/sys/net/core/rmem_max"], True),
    (["cat", "/proc/stat"], False),
    (["ss", "-Hltnp"], True),
    (["ss", "-tin"], False),
    (["ip", "-n", "web", "-j", "-d", "link", "show"], True),
    (["kill", "-s", "TERM", "--", "-4242"], True),
    (["taskset", "-c", "1", "/var/lib/offlab/cache/cd/offlab-fwd", "--config", "x"], True),
])
def test_only_what_needs_root_goes_through_sudo(args, root):
    from offlab.hosts.privilege import needs_root
    assert needs_root(args) is root


def test_a_run_whose_lease_is_lost_is_interrupted_with_the_reason(tmp_path):
    """runflow: a LeaseLost raised while the run builds or measures (a fenced command
    refused) ends the run as interrupted, the reason in its notes, whatever the runner
    was doing; a real store (SQLite) is the oracle."""
    from rich.console import Console

    from offlab.run import plan, runflow
    from offlab.store.store import Store

    cases = plan.parse('name = "l"\nruns = 1\nduration = 1.0\nmtus = [1500]\nscenarios = ["bare"]\n'
                       'traffic = ["tcp"]\nsequences = ["all-on"]\n', "p").cases

    def build(*args, **kwargs):
        raise LeaseLost("rx", "run B holds /var/lib/offlab/run now")

    with Store(tmp_path / "s.sqlite") as store:
        session = runflow.begin(store, "l", cases, plan.parse(
            'name = "l"\nruns = 1\nduration = 1.0\nmtus = [1500]\nscenarios = ["bare"]\ntraffic = ["tcp"]\n'
            'sequences = ["all-on"]\n', "p").settings())
        outcome = runflow._run(store, session, Console(file=open("/dev/null", "w")), False, None, build,
                               lambda: None)
        info = store.load_run(session.run_id)
    assert outcome.status == "interrupted" and "run B holds" in (outcome.reason or "")
    assert info.status == "interrupted" and "interrupted: rx: lease lost (run B holds" in info.info.notes


def test_a_read_in_a_shell_runs_as_the_user_when_the_caller_says_so():
    """Every `sh -c` counts as root (the table cannot read scripts); a caller whose script
    only reads (the CPU sampler's schedstat glob, the doctor's `command -v`) passes
    root=False and it runs as the SSH user even with sudo = true."""
    from offlab.hosts.hostsfile import parse
    from offlab.hosts.ssh import SshHost

    hosts = parse({"sender": {"ssh": "s1", "interface": "e1", "address": "192.0.2.1", "peer": "192.0.2.2",
                              "app_core": 0, "sudo": True},
                   "receiver": {"ssh": "s2", "interface": "e1", "address": "192.0.2.2", "peer": "192.0.2.1",
                                "app_core": 1}}, "h.toml")
    host = SshHost("sender", hosts.hosts["sender"], None)
    script = ["sh", "-c", "cat /proc/42/task/*/schedstat"]
    assert "sudo -n sh -c" in host._remote(script)
    assert "sudo" not in host._remote(script, root=False)
    assert not host._shown(script, False).startswith("sudo")


def test_reads_of_a_servers_qemu_threads_run_as_the_user():
    """Shell scripts that only read a server's /proc say so (root=False), or the table
    would send them through sudo like every `sh -c`: the per-sample stat of QEMU's
    threads (measure.py) and their names (remote_guests.py)."""
    from types import SimpleNamespace

    from offlab.measure.measure import _remote_thread_times
    from offlab.proc import Completed
    from offlab.topology.remote_guests import RemoteGuestPath

    class Asked:
        def __init__(self, answer: str):
            self.answer, self.roots = answer, []

        def run(self, args, *, timeout=30.0, check=True, input_text=None, root=None):
            self.roots.append((args[0], root))
            return Completed(tuple(args), 0, self.answer, "")

    stat = Asked("")
    _remote_thread_times({"qemu": (stat, ((42, 43),))})
    names = Asked("43 CPU 0/KVM\n")
    RemoteGuestPath._read_threads(SimpleNamespace(pid=42, host=names))
    assert stat.roots == [("sh", False)] and names.roots == [("sh", False)]


class _ThisMachine(Host):
    """Commands run here: the journal reads `ethtool -k lo` and writes its file."""

    name, machine = "tx", "local"

    def run(self, args, *, timeout=10.0, check=True, input_text=None, root=None):
        return proc.run(list(args), timeout=timeout, check=check, input_text=input_text)

    def spawn(self, args, *, capture_stdout=False):
        raise AssertionError("a journal never starts a process itself")


class _ServerCopy(Mirror):
    """The server-side copy, as seen from the journal: whether this machine's journal was
    still there when the server's was removed."""

    def __init__(self, journal_path):
        self.journal_path, self.local_kept_until_removed = journal_path, None

    def write(self, key, record, undo_script, log):
        pass

    def remove(self, key):
        self.local_kept_until_removed = self.journal_path().exists()


def test_a_closed_journal_leaves_the_servers_copy_first_so_a_kill_between_never_orphans_it(tmp_path):
    """Killed between the two removals, the run must leave this machine's journal (which
    `offlab restore` replays and then releases the server), never a server copy alone:
    that kept the hold past `offlab doctor --clean` until the watchdog's delay ran out
    (test_router_hosts' kill -9 during restore, once SSH commands were fast)."""
    identity = Identity("m" * 32, "boot", "00:00:00:00:00:00")
    spec = HostSpec(role="sender", ssh="root@server", interface="lo", address="", peer="", app_core=0)
    journal = None
    copy = _ServerCopy(lambda: journal.path)
    journal = Journal(_ThisMachine(), spec, None, identity, root=tmp_path, mirror=copy)
    assert journal.path.exists()
    journal.discard()
    assert copy.local_kept_until_removed is True
    assert not journal.path.exists()


class _RefusedServer:
    """A held server whose hold is gone: its beat is the real fenced `touch`, refused by
    the real token check (as ServerRun.beat through SshHost). `raced`: the main thread's
    own command is refused at the same moment and reaches the fence first."""

    def __init__(self, tmp_path, raced: bool):
        self.fence = Fence(str(_held(tmp_path, "run B")), "run A", "rx")
        self.raced = raced
        self.beats = 0

    @property
    def lost(self):
        return self.fence.lost

    def beat(self):
        self.beats += 1
        done = _sh(self.fence.wrap(["touch", "heartbeat"]))
        assert done.returncode == LEASE_LOST_STATUS
        if self.raced:
            self.fence.lose("refused to the main thread's command")
        raise self.fence.lose_from(done.stderr)


@pytest.mark.parametrize("raced", [False, True])
def test_the_heartbeat_stops_the_run_only_when_it_learnt_of_the_loss_first(tmp_path, raced):
    """The heartbeat's stop (a SIGTERM to the main thread) is for a run that does not
    know yet; a run whose own command was refused is already unwinding, and a signal
    would land in its restore (test_host_lease's frozen-controller test, once, under load:
    controller A's journal left behind)."""
    import threading
    import time
    from offlab.hosts.server import Heartbeat

    server = _RefusedServer(tmp_path, raced)
    told = threading.Event()
    heartbeat = Heartbeat([server], 0.01, on_lost=lambda lost: told.set()).start()  # type: ignore[list-item]
    deadline = time.monotonic() + 10
    while server.beats == 0 or (not raced and not told.is_set()):
        assert time.monotonic() < deadline, "the heartbeat never beat"
        time.sleep(0.01)
    time.sleep(0.05)  # a second beat would have been due: a lost server is not beaten again
    heartbeat.stop()
    assert told.is_set() is not raced and server.beats == 1


_HELD_SIGNAL = """
import os, signal, sys, time
from offlab.hosts.server import Heartbeat
from offlab.topology.base import deferred_signals
seen = []
signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(time.monotonic()))
heartbeat = Heartbeat([], 0.05).start()
time.sleep(0.1)  # the heartbeat's thread is running
with deferred_signals():
    os.kill(os.getpid(), signal.SIGTERM)  # to the process, as `kill` or a terminal sends it
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        pass  # bytecode running: a handler that was due would run here
    held = not seen
end = time.monotonic() + 5
while not seen and time.monotonic() < end:
    time.sleep(0.01)  # delivered once the mask is back
released = bool(seen)
heartbeat.stop()
print(held, released)
"""


def test_a_signal_to_the_process_waits_for_the_restore_while_the_heartbeat_runs():
    """deferred_signals blocks the termination signals in the main thread only; the
    kernel hands a signal sent to the process to any thread that does not block it,
    and Python then runs the handler in the main thread all the same. The heartbeat's
    thread blocks them, so a restore under deferred_signals is not cut by a Ctrl-C."""
    done = subprocess.run([sys.executable, "-c", _HELD_SIGNAL], capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"], done.stdout
