"""The real-host guards as pure functions on what a server says (recorded `ip -j`
output): the lockout guard, one kernel per role, leftovers of another offlab, interface
names, the ssh_config's owner, the pinned ssh options, and the undo script the server's
watchdog runs. The same guards on live sshd "servers": tests/integration/test_host_safety.py."""

import os
import subprocess
import sys

import pytest

from offlab.hosts import changes
from offlab.hosts.guard import InterfaceUse, check, check_udp_rates, findings, foreign_devices
from offlab.hosts.hostsfile import HostsFileError, check_ssh_config, parse
from offlab.hosts.journal import Record, undo_script
from offlab.hosts.ssh import ssh_command
from offlab.hosts.base import HostError
from hangguard import HANG_S

DOC = {"sender": {"ssh": "s1", "interface": "ens1f0", "address": "192.0.2.1", "peer": "192.0.2.2", "app_core": 2},
       "receiver": {"ssh": "s2", "interface": "ens1f0", "address": "192.0.2.2", "peer": "192.0.2.1", "app_core": 3}}
HOSTS = parse(DOC, "h.toml")
SPEC = HOSTS.hosts["sender"]
LINKS = ({"ifname": "lo"}, {"ifname": "eno1"}, {"ifname": "ens1f0", "mtu": 1500})
TEST_ADDR = ({"local": "192.0.2.1", "prefixlen": 24}, {"local": "fe80::1", "prefixlen": 64})


def use(**changed) -> InterfaceUse:
    base = dict(ssh_connection="198.51.100.7 50000 198.51.100.1 22", ssh_route_device="eno1", links=LINKS,
                addresses=TEST_ADDR, default_routes=({"dst": "default", "gateway": "198.51.100.254", "dev": "eno1"},),
                boot_id="b1")
    return InterfaceUse(**{**base, **changed})


def rx(**changed) -> InterfaceUse:
    return use(**{"addresses": ({"local": "192.0.2.2", "prefixlen": 24},), "boot_id": "b2", **changed})


@pytest.mark.parametrize("route, nexthops", [
    # ECMP: only nexthops[], no dev of its own
    ({"dst": "default", "nexthops": [{"gateway": "198.51.100.254", "dev": "eno1"},
                                     {"gateway": "192.0.2.254", "dev": "ens1f0"}]}, ()),
    # a nexthop group: neither dev nor nexthops, only nhid
    ({"dst": "default", "nhid": 10}, ({"id": 10, "group": [{"id": 1}, {"id": 2}]},
                                      {"id": 1, "gateway": "198.51.100.254", "dev": "eno1"},
                                      {"id": 2, "gateway": "192.0.2.254", "dev": "ens1f0"})),
    # another routing table (policy routing), IPv6
    ({"dst": "default", "gateway": "2001:db8::1", "dev": "ens1f0", "table": "100"}, ()),
])
def test_a_default_route_by_the_test_interface_is_found_in_every_layout(route, nexthops):
    found = findings(SPEC, use(default_routes=(route,), nexthops=nexthops))
    assert len(found) == 1 and "default route" in found[0] and "leaves by ens1f0" in found[0]


def test_an_upper_device_in_another_namespace_and_vfs_are_found():
    # vfinfo_list as iproute2 6.1 prints it (ip/ipaddress.c, print_vfinfo) for a PF with
    # two VFs: no SR-IOV device runs here to print it (docs/real-hosts.md, the tests table).
    vf = {"link_type": "ether", "address": "00:00:00:00:00:00", "broadcast": "ff:ff:ff:ff:ff:ff",
          "vlan_list": [{}], "rate": {"max_tx": 0, "min_tx": 0}, "spoofchk": True, "link_state": "auto",
          "trust": False, "query_rss_en": False}
    links = ({"ifname": "lo"}, {"ifname": "eno1"}, {"ifname": "ens1f0", "ifindex": 4, "mtu": 1500,
                                                     "vfinfo_list": [{"vf": 0, **vf}, {"vf": 1, **vf}]})
    container = ({"ifname": "eth0", "link_index": 4, "link_netnsid": 0, "lower_here": True, "netns": "web",
                  "linkinfo": {"info_kind": "macvlan"}},
                 {"ifname": "veth1", "link_index": 4, "link_netnsid": 0, "lower_here": True, "netns": "web",
                  "linkinfo": {"info_kind": "veth"}},
                 # the same index in a third namespace: another device (an ifindex is per namespace)
                 {"ifname": "eth1", "link_index": 4, "link_netnsid": 1, "lower_here": False, "netns": "web",
                  "linkinfo": {"info_kind": "ipvlan"}})
    found = findings(SPEC, use(links=links, foreign_links=container))
    assert "eth0 (macvlan) in namespace web sits on ens1f0" in found
    assert "ens1f0 has 2 SR-IOV VFs (their traffic goes through it)" in found
    assert len(found) == 2  # a veth peer is not an upper device, nor one on another namespace's device


def test_a_dedicated_test_interface_passes():
    assert findings(SPEC, use()) == []


@pytest.mark.parametrize("changed, text", [
    ({"ssh_route_device": "ens1f0"}, "offlab's own SSH session (from 198.51.100.7) runs over ens1f0"),
    ({"ssh_connection": "192.0.2.9 5 192.0.2.1 22"}, "offlab's own SSH session"),
    ({"default_routes": ({"dst": "default", "gateway": "192.0.2.254", "dev": "ens1f0"},)},
     "the default route via 192.0.2.254 leaves by ens1f0"),
    ({"links": (*LINKS[:2], {"ifname": "ens1f0", "master": "br0"})}, "ens1f0 is a port of br0"),
    ({"links": (*LINKS, {"ifname": "ens1f0.7", "link": "ens1f0", "linkinfo": {"info_kind": "vlan"}})},
     "ens1f0.7 (vlan) sits on ens1f0"),
    ({"addresses": (*TEST_ADDR, {"local": "10.9.9.9", "prefixlen": 8})},
     "ens1f0 also holds 10.9.9.9/8, outside the test prefix 192.0.2.0/24"),
])
def test_each_use_of_the_test_interface_is_found(changed, text):
    found = findings(SPEC, use(**changed))
    assert len(found) == 1 and text in found[0]


def test_a_shared_interface_is_refused_in_one_line_naming_the_override():
    shared = use(ssh_route_device="ens1f0")
    with pytest.raises(HostError) as caught:
        check(HOSTS, {"sender": shared, "receiver": rx()}, allow_shared=False)
    assert "\n" not in str(caught.value) and "--allow-shared-interface" in str(caught.value)
    warnings = check(HOSTS, {"sender": shared, "receiver": rx()}, allow_shared=True)
    assert len(warnings) == 1 and warnings[0].startswith("sender (s1): offlab's own SSH session")


def test_pin_irqs_on_a_shared_interface_is_refused_even_when_allowed():
    pinned = parse({**DOC, "sender": {**DOC["sender"], "irq_core": 1, "pin_irqs": True}}, "h.toml")
    with pytest.raises(HostError, match="pin_irqs would move the IRQs"):
        check(pinned, {"sender": use(ssh_route_device="ens1f0"), "receiver": rx()}, allow_shared=True)


def test_two_roles_on_one_kernel_are_refused_unless_asked_for():
    with pytest.raises(HostError, match="one kernel.*same_kernel = true"):
        check(HOSTS, {"sender": use(), "receiver": rx(boot_id="b1")}, allow_shared=False)
    same = parse({**DOC, "same_kernel": True}, "h.toml")
    assert check(same, {"sender": use(), "receiver": rx(boot_id="b1")}, allow_shared=False) == []


def test_devices_of_another_offlab_are_named():
    left = use(links=(*LINKS, {"ifname": "ofl-tn0"}))
    assert foreign_devices(HOSTS, left) == ["ofl-tn0"]
    with pytest.raises(HostError, match="ofl-tn0 already there"):
        check(HOSTS, {"sender": left, "receiver": rx()}, allow_shared=False)


@pytest.mark.parametrize("name", ["../../etc", "a" * 16, "eth 0", "x/y", ".."])
def test_interface_names_are_validated(name):
    with pytest.raises(HostsFileError, match="is not a Linux interface name"):
        parse({**DOC, "sender": {**DOC["sender"], "interface": name}}, "h.toml")


def test_top_level_keys():
    assert parse({**DOC, "watchdog_s": 10}, "h.toml").watchdog_s == 10
    with pytest.raises(HostsFileError, match="watchdog_s = 1 must be whole seconds"):
        parse({**DOC, "watchdog_s": 1}, "h.toml")


def test_an_ssh_config_others_could_write_is_refused(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host x\n")
    config.chmod(0o644)
    check_ssh_config(str(config), "h.toml")
    config.chmod(0o666)
    with pytest.raises(HostsFileError, match="writable by others"):
        check_ssh_config(str(config), "h.toml")
    config.chmod(0o644)
    if os.geteuid() == 0:
        os.chown(config, 12345, 12345)
        with pytest.raises(HostsFileError, match="owned by uid 12345"):
            check_ssh_config(str(config), "h.toml")


def test_ssh_options_are_pinned_and_host_keys_left_to_the_config(tmp_path):
    args = ssh_command("/etc/x", tmp_path, "lab@s1", None)
    joined = " ".join(args)
    assert args[0] == "ssh" and args[-1] == "lab@s1"
    for pinned in ("ForwardAgent=no", "ClearAllForwardings=yes", "BatchMode=yes"):
        assert f"-o {pinned}" in joined
    assert "StrictHostKeyChecking" not in joined and "UserKnownHostsFile" not in joined
    assert ssh_command(None, tmp_path, "s1", "alice")[:4] == ["runuser", "-u", "alice", "--"]


def test_the_undo_script_runs_every_undo_newest_first_and_passes_failures(tmp_path):
    marker = tmp_path / "value"
    marker.write_text("9000\n")
    record = Record({}, None, {}, [c.to_json() for c in (
        changes.file(str(marker), "1500", "9000"),
        changes.device("ofl-nothere0"),  # its undo fails: the next one still runs
    )])
    script = undo_script(record)
    body = script.split("\n", 3)[3]  # after the header and the record
    assert body.index("ofl-nothere0") < body.index(str(marker))
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "undo failed: device ofl-nothere0" in done.stdout
    assert marker.read_text() == "1500\n"


def test_a_process_undo_kills_only_the_same_process_group():
    sleeper = subprocess.Popen(["setsid", "sleep", "60"])
    try:
        stat = open(f"/proc/{sleeper.pid}/stat").read()
        start = stat.rsplit(") ", 1)[-1].split()[19]
        wrong = changes.process(sleeper.pid, str(int(start) + 1), "sleep 60")
        subprocess.run(list(wrong.undo[0]), check=True)
        assert sleeper.poll() is None  # another start time: not ours, left alone
        right = changes.process(sleeper.pid, start, "sleep 60")
        subprocess.run(list(right.undo[0]), check=True)
        assert sleeper.wait(timeout=10) == -9
    finally:
        if sleeper.poll() is None:
            sleeper.kill()


def test_udp_on_real_hosts_is_capped_unless_raised():
    from offlab.run.plan import parse as parse_plan
    plan = 'name = "u"\nruns = 1\nduration = 1.0\nmtus = [1500]\nscenarios = ["bare"]\ntraffic = ["udp1472"]\nsequences = ["all-on"]\nudp_rate = "{}"\n'
    capacity = parse_plan(plan.format("capacity"), "p").cases
    with pytest.raises(HostError, match="a capacity search .* above the cap of 1 Gbit/s.*udp_max_rate"):
        check_udp_rates(HOSTS, capacity)
    with pytest.raises(HostError, match="UDP at 2.5 Gbit/s"):
        check_udp_rates(HOSTS, parse_plan(plan.format("2.5G"), "p").cases)
    check_udp_rates(HOSTS, parse_plan(plan.format("500M"), "p").cases)
    check_udp_rates(parse({**DOC, "udp_max_rate": "unlimited"}, "h.toml"), capacity)
    with pytest.raises(HostsFileError, match="udp_max_rate = 'fast'"):
        parse({**DOC, "udp_max_rate": "fast"}, "h.toml")


def test_the_cap_counts_every_stream_and_direction():
    """iperf3 applies -b per stream and per direction: 1G x 8 streams is 8 Gbit/s offered."""
    from offlab.run.plan import parse as parse_plan
    plan = ('name = "u"\nruns = 1\nduration = 1.0\nmtus = [1500]\nscenarios = ["bare"]\ntraffic = ["udp1472"]\n'
            'sequences = ["all-on"]\nudp_rate = "{}"\nstreams = {}\n')
    with pytest.raises(HostError, match=r"UDP at 8 Gbit/s in total \(1 Gbit/s x 8 streams\)"):
        check_udp_rates(HOSTS, parse_plan(plan.format("1G", 8), "p").cases)
    with pytest.raises(HostError, match="1.2 Gbit/s in total"):
        check_udp_rates(HOSTS, parse_plan(plan.format("300M", 4), "p").cases)
    check_udp_rates(HOSTS, parse_plan(plan.format("250M", 4), "p").cases)


def test_a_dry_run_refuses_what_the_run_would(tmp_path):
    """The cap is checked before any server is reached: a dry run above it is refused in
    one line, as the run is (a dry run that passes is a run that starts)."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[sender]\nssh = "s1"\ninterface = "eth1"\naddress = "192.0.2.1"\npeer = "192.0.2.2"\napp_core = 0\n\n'
                     '[receiver]\nssh = "s2"\ninterface = "eth1"\naddress = "192.0.2.2"\npeer = "192.0.2.1"\napp_core = 1\n')
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "u"\nruns = 1\nduration = 1.0\nmtus = [1500]\nscenarios = ["bare"]\n'
                    'traffic = ["udp1472"]\nsequences = ["all-on"]\nudp_rate = "2G"\n')
    done = subprocess.run([sys.executable, "-c", "from offlab.entry import main; main()", "run", "--hosts",
                           str(hosts), "--plan", str(plan), "--dry-run"], capture_output=True, text=True,
                          timeout=HANG_S, cwd=tmp_path)
    assert done.returncode == 1 and "above the cap of 1 Gbit/s" in done.stderr.strip().splitlines()[-1], done


def test_a_taken_iperf3_port_and_a_clashing_vxlan_are_named():
    taken = rx(listening=('LISTEN 0 5 10.0.0.2:5201 0.0.0.0:* users:(("iperf3",pid=4242,fd=3))',))
    with pytest.raises(HostError, match=r"TCP port 5201, iperf3's, is taken by iperf3 \(pid 4242\)"):
        check(HOSTS, {"sender": use(), "receiver": taken}, allow_shared=False)
    vxlan = {"ifname": "vx0", "linkinfo": {"info_kind": "vxlan", "info_data": {"id": 42, "port": 4789}}}
    with pytest.raises(HostError, match="vx0 already uses VXLAN VNI 42 on UDP port 4789"):
        check(HOSTS, {"sender": use(links=(*LINKS, vxlan)), "receiver": rx()}, allow_shared=False)


def test_the_configured_test_network_is_what_the_guard_checks():
    """[test_network]: iperf3's port, the VNI/port of a clashing VXLAN device and the
    prefixes are the configured ones; the defaults no longer clash."""
    net = {"vni": 4242, "vxlan_port": 8472, "prefix": "172.30.8.0/29", "iperf3_port": 5301}
    hosts = parse({**DOC, "test_network": net}, "h.toml")
    default_vxlan = {"ifname": "vx0", "linkinfo": {"info_kind": "vxlan", "info_data": {"id": 42, "port": 4789}}}
    default_iperf3 = ('LISTEN 0 5 10.0.0.2:5201 0.0.0.0:* users:(("iperf3",pid=4242,fd=3))',)
    check(hosts, {"sender": use(links=(*LINKS, default_vxlan)), "receiver": rx(listening=default_iperf3)},
          allow_shared=False)
    theirs = {"ifname": "vx9", "linkinfo": {"info_kind": "vxlan", "info_data": {"id": 4242, "port": 8472}}}
    with pytest.raises(HostError, match="vx9 already uses VXLAN VNI 4242 on UDP port 8472.*set another vni"):
        check(hosts, {"sender": use(links=(*LINKS, theirs)), "receiver": rx()}, allow_shared=False)
    taken = rx(listening=('LISTEN 0 5 *:5301 *:* users:(("nginx",pid=7,fd=3))',))
    with pytest.raises(HostError, match=r"TCP port 5301, iperf3's, is taken by nginx \(pid 7\).*iperf3_port"):
        check(hosts, {"sender": use(), "receiver": taken}, allow_shared=False)


@pytest.mark.parametrize("table, text", [
    ({"prefix": "192.0.2.0/29"}, "ens1f0 holds 192.0.2.1/24, overlapping prefix 192.0.2.0/29; set another prefix"),
    ({"guest_prefix": "192.0.0.0/16"}, "holds 192.0.2.1/24, overlapping guest_prefix 192.0.0.0/16"),
])
def test_a_prefix_over_an_address_of_the_test_interface_is_refused(table, text):
    hosts = parse({**DOC, "test_network": table}, "h.toml")
    with pytest.raises(HostError, match=text.replace(".", r"\.")):
        check(hosts, {"sender": use(), "receiver": rx()}, allow_shared=True)


def test_a_lower_device_in_another_namespace_counts_only_when_that_namespace_is_the_servers():
    """An upper device's `link_index` is an ifindex of the namespace its `link_netnsid`
    names (as the upper's namespace numbers them): it is the server's test interface only
    when that namespace is the server's own — the root one (unnamed) on a server, its own
    name when the server is itself a named namespace (the SSH rig)."""
    import json as _json

    from offlab.hosts.guard import _namespace_links
    from tests.fixtures.recording_host import RecordingHost

    def answers(here: str):
        def answer(args: list[str]) -> str:
            line = " ".join(args)
            if line == "ip -j netns list":
                return _json.dumps([{"name": "web"}, {"name": "db"}])
            if line == "ip netns identify":
                return here
            namespace = args[-1]
            if "link show" in line:
                return _json.dumps([{"ifname": "eth0", "link_index": 4, "link_netnsid": 0,
                                     "linkinfo": {"info_kind": "macvlan"}}])
            # web's nsid 0 is unnamed (the root namespace); db's is web
            return _json.dumps([{"nsid": 0}] if namespace == "web" else [{"nsid": 0, "name": "web"}])
        return answer

    on_root = {link["netns"]: link["lower_here"] for link in _namespace_links(RecordingHost("s", answers("")))}
    assert on_root == {"web": True, "db": False}
    in_web = {link["netns"]: link["lower_here"] for link in _namespace_links(RecordingHost("s", answers("web\n")))}
    assert in_web == {"web": False, "db": True}


def test_a_runtime_directory_too_long_for_sshs_control_socket_is_one_line_and_makes_nothing(monkeypatch):
    """ssh makes its control socket as `<dir>/<40 hex>.<16 random>` first; a unix socket's
    path holds 107 bytes (the kernel is the oracle here: a socket at the longest allowed
    path binds, one byte more does not). Past that every ssh command failed with "path
    too long"; now the run says which variable to shorten, before making anything."""
    import shutil
    import socket
    import tempfile
    from pathlib import Path

    from offlab.hosts import ssh

    base = Path(tempfile.mkdtemp(prefix="ofl-", dir="/tmp"))  # short: pytest's tmp_path alone is too long
    try:
        room = ssh.CONTROL_DIR_MAX - len("/ssh-1234567-") - 8  # the run's part under the root, pid 1234567
        root = base / ("r" * (room - len(str(base)) - 1))
        monkeypatch.setattr(ssh, "RUNTIME_ROOT", root)
        monkeypatch.setattr(ssh.os, "getpid", lambda: 1234567)
        made = ssh._control_dir()
        assert len(str(made)) == ssh.CONTROL_DIR_MAX
        for extra, binds in ((0, True), (1, False)):
            path = f"{made}/{'c' * 40}.{'x' * (16 + extra)}"
            with socket.socket(socket.AF_UNIX) as sock:
                try:
                    sock.bind(path)
                    bound = True
                except OSError:
                    bound = False
            assert bound is binds, (len(path), extra)

        too_long = base / ("r" * (room - len(str(base))))
        monkeypatch.setattr(ssh, "RUNTIME_ROOT", too_long)
        with pytest.raises(HostError) as refused:
            ssh._control_dir()
        said = str(refused.value)
        assert "OFFLAB_RUNTIME_DIR" in said and f"at most {len(str(root))} characters" in said and "\n" not in said
        assert not too_long.exists()
    finally:
        shutil.rmtree(base)
