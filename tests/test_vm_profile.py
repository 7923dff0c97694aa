"""A guest NIC profile becomes the QEMU arguments it means, and what this host cannot
give is refused in one line."""

from pathlib import Path

import pytest

from offlab.vm import DeviceFeatures, GuestImage, GuestSpec, NicProfile, ProfileError, check_backend, qemu_argv

IMAGE = GuestImage(Path("/g"), Path("/g/vmlinuz"), Path("/g/initramfs.gz"), {})


def option(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


def test_tap_backend_is_qemus_userspace_virtio_net_on_a_named_tap():
    nic = NicProfile("tap", tap="ofl-ga", mac="52:54:00:00:0a:01")
    assert nic.netdev_args() == ["-netdev", "tap,id=n0,ifname=ofl-ga,script=no,downscript=no"]
    assert nic.device_args() == ["-device", "virtio-net-pci,netdev=n0,id=nic0,mac=52:54:00:00:0a:01,romfile="]


def test_device_features_become_on_off_properties_and_unset_ones_stay_qemus_default():
    features = DeviceFeatures(host_tso4=False, guest_tso4=False, csum=True)
    nic = NicProfile("tap", features, tap="ofl-ga")
    assert nic.device_args()[1].endswith(",romfile=,csum=on,guest_tso4=off,host_tso4=off")
    every = DeviceFeatures(**{name: False for name in DeviceFeatures.__dataclass_fields__})
    assert len(every.options()) == 10 and all(o.endswith("=off") for o in every.options())


def test_features_parse_from_text_and_reject_unknown_names():
    assert DeviceFeatures.parse("host_tso4=off, mrg_rxbuf=on") == DeviceFeatures(host_tso4=False, mrg_rxbuf=True)
    with pytest.raises(ProfileError, match="host_tso4"):
        DeviceFeatures.parse("tso=off")
    with pytest.raises(ProfileError):
        DeviceFeatures.parse("host_tso4=no")


def test_tap_vhost_asks_for_the_kernels_vhost_net():
    nic = NicProfile("tap-vhost", tap="ofl-ga")
    assert nic.netdev_args()[1].endswith(",vhost=on")


def test_tap_vhost_is_refused_in_one_line_without_dev_vhost_net(tmp_path):
    nic = NicProfile("tap-vhost", tap="ofl-ga")
    with pytest.raises(ProfileError) as refused:
        check_backend(nic, vhost_net=str(tmp_path / "vhost-net"))
    message = str(refused.value)
    assert "\n" not in message and "vhost-net" in message and "use backend tap" in message
    (tmp_path / "vhost-net").touch()
    check_backend(nic, vhost_net=str(tmp_path / "vhost-net"))  # present: accepted


def test_vhost_user_connects_to_the_backends_socket_and_shares_the_guests_memory(tmp_path):
    sock = tmp_path / "fwd.sock"
    nic = NicProfile("vhost-user", socket=str(sock))
    assert nic.netdev_args() == ["-chardev", f"socket,id=vu0,path={sock},reconnect=1",
                                 "-netdev", "vhost-user,id=n0,chardev=vu0"]
    argv = qemu_argv(GuestSpec("a", nic, "10.0.0.1/24", memory_mb=512), IMAGE, "tcg", tmp_path)
    assert option(argv, "-machine") == ["pc,memory-backend=mem0"]
    assert option(argv, "-object") == ["memory-backend-memfd,id=mem0,size=512M,share=on"]
    assert option(argv, "-m") == ["512"]
    with pytest.raises(ProfileError, match="start the backend"):
        check_backend(nic)  # no backend listening yet


def test_a_tap_guest_has_private_memory_two_serial_ports_and_its_address_on_the_command_line(tmp_path):
    spec = GuestSpec("a", NicProfile("tap", tap="ofl-ga"), "10.213.0.1/24", mtu=9000)
    argv = qemu_argv(spec, IMAGE, "tcg", tmp_path)
    assert argv[0] == "qemu-system-x86_64"
    assert option(argv, "-machine") == ["pc"] and option(argv, "-object") == []
    assert option(argv, "-accel") == ["tcg"] and option(argv, "-cpu") == ["max"]
    assert option(argv, "-serial") == ["chardev:console", "chardev:agent"]
    assert f"socket,id=agent,path={tmp_path}/agent.sock,server=on,wait=off" in option(argv, "-chardev")
    assert "ofl.ip=10.213.0.1/24 ofl.mtu=9000" in option(argv, "-append")[0]
    assert option(argv, "-name") == ["ofl-a,debug-threads=on"]  # vCPU threads carry their names
    kvm = qemu_argv(spec, IMAGE, "kvm", tmp_path)
    assert option(kvm, "-accel") == ["kvm"] and option(kvm, "-cpu") == ["host"]


@pytest.mark.parametrize("kwargs", [dict(backend="xen"), dict(backend="tap"), dict(backend="tap", tap="x" * 16),
                                    dict(backend="vhost-user"), dict(backend="tap", tap="t", mac="52:54")])
def test_profiles_that_cannot_work_are_refused(kwargs):
    with pytest.raises(ProfileError):
        NicProfile(**kwargs)


def test_guest_names_and_addresses_are_checked():
    nic = NicProfile("tap", tap="ofl-ga")
    for name, address in (("A", "10.0.0.1/24"), ("a-b", "10.0.0.1/24"), ("a", "10.0.0.1")):
        with pytest.raises(ValueError):
            GuestSpec(name, nic, address)
