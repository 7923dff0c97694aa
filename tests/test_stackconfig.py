"""The stack configuration of a host: parsers on output recorded here, and the
differences `compare` lists (issue #30, item 5)."""

from offlab.measure import stackconfig
from tests.fixtures.recording_host import RecordingHost

GREP = ("/proc/sys/net/ipv4/tcp_congestion_control:bbr\n/proc/sys/net/ipv4/tcp_rmem:4096\t131072\t33554432\n"
        "/sys/class/net/ofl-v0/gro_flush_timeout:0\n")
LINKS = ('[{"ifindex":1,"ifname":"lo","mtu":65536,"gso_max_size":65536,"gro_max_size":65536},'
         '{"ifindex":5,"ifname":"ofl-v0","mtu":1500,"gso_max_size":65536,"gso_max_segs":65535,"gro_max_size":65536}]')
QDISCS = ('[{"kind":"mq","handle":"0:","dev":"eth0","root":true},{"kind":"fq_codel","parent":"0:1","dev":"eth0"},'
          '{"kind":"fq_codel","parent":"0:2","dev":"eth0"},{"kind":"noqueue","handle":"0:","dev":"ofl-v0","root":true}]')


def _answer(args):
    if args[:2] == ["grep", "-H"]:
        return GREP
    if args[0] == "ip" and "link" in args:
        return LINKS
    if args[0] == "tc":
        return QDISCS
    if args[0] == "grep":
        return "/sys/devices/system/cpu/cpufreq/policy0/scaling_governor:performance\n" \
               "/sys/devices/system/cpu/cpufreq/policy1/scaling_governor:performance\n"
    return {"iperf3": "iperf 3.16 (cJSON 1.7.15)\nLinux rx 6.1", "uname": "6.1.0-18-amd64"}.get(args[0], "v1")


def test_one_hosts_stack_as_read_through_the_host_interface():
    host = RecordingHost("rx", _answer)
    found = stackconfig.read(host, ["ofl-v0"])
    assert found["net.ipv4.tcp_congestion_control"] == "bbr"
    assert found["net.ipv4.tcp_rmem"] == "4096 131072 33554432"
    assert found["dev.ofl-v0.gro_flush_timeout"] == "0"
    assert found["dev.ofl-v0.gso_max_size"] == "65536" and "dev.lo.mtu" not in found
    assert found["dev.ofl-v0.qdisc"] == "noqueue" and "dev.eth0.qdisc" not in found
    assert found["cpu.governor"] == "performance"
    assert found["tool.iperf3"] == "iperf 3.16 (cJSON 1.7.15)" and found["tool.kernel"] == "6.1.0-18-amd64"


def test_multiqueue_root_names_its_children():
    assert stackconfig.parse_qdiscs(QDISCS, ["eth0"]) == {"dev.eth0.qdisc": "mq(fq_codel×2)"}
    assert stackconfig.parse_qdiscs("garbage", ["eth0"]) == {}


def test_differences_name_place_host_and_both_values():
    a = {"bare · MTU 1500": {"rx": {"net.ipv4.tcp_congestion_control": "cubic", "cpu.governor": "powersave"}}}
    b = {"bare · MTU 1500": {"rx": {"net.ipv4.tcp_congestion_control": "bbr", "cpu.governor": "powersave"}},
         "vxlan · MTU 1500": {"rx": {}}}
    assert stackconfig.differences(a, b) == (
        "bare · MTU 1500 rx net.ipv4.tcp_congestion_control: cubic → bbr",)
    assert stackconfig.differences(a, a) == ()
