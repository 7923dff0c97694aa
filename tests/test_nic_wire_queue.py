"""The NIC wire's queue towards the receiver holds a receive window of MTU frames: at
veth's default 1000 packets it held 64 MB of TSO super-packets but 1.5 MB of MTU frames,
so TSO-off alone overflowed it (issue 37: the quick plan's tso-off rows dropped 3.4 % of
their segments at ofl-w1's qdisc and were set apart)."""

from offlab.topology.bare import wire_queue_frames


def test_the_wire_queue_holds_the_largest_receive_window_in_mtu_frames():
    rmem_max = 33_554_432  # this kernel's net.ipv4.tcp_rmem maximum in a new namespace
    frames = wire_queue_frames(rmem_max, 1500)
    assert frames * 1500 >= rmem_max
    # a VXLAN frame carries 1398 bytes of TCP payload in its 1500: still a whole window
    assert frames * 1398 >= rmem_max
    assert wire_queue_frames(4096, 1500) == 1000  # never below veth's own default
