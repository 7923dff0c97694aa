"""Real virtual machines: QEMU guests with a virtio-net NIC, built by `make guest`.

    image.py     where the built kernel and initramfs are (`find_image`)
    profile.py   a guest NIC: backend (tap, tap-vhost, vhost-user) and device features
    accel.py     KVM when a probe guest boots under it, TCG otherwise
    lifetime.py  QEMU dies with the process that started it
    agent.py     the host's end of the guest agent on the second serial port
    spec.py      `GuestSpec` (name, NIC, address, MTU, size) and `GuestError`
    guest.py     `Guest`, the one guest class: launch, wait for its agent (its TAP joining
                 its bridge), run commands, stop — through a `Launcher` for where QEMU runs
    qemu.py      QEMU's command line; `InNamespace`: QEMU in one of the lab's namespaces
    remote.py    `OverSsh`: QEMU on a server over SSH (imported from there: it needs ssh)
    features.py  the negotiated virtio bits and `ethtool -k`, read inside the guest
    threads.py   QEMU's threads by class (vCPU, vhost, other) and their CPU ticks
"""

from .agent import AgentResult
from .features import GuestNicState, decode_feature_bits, read_guest_nic
from .image import GuestImage, GuestImageMissing, find_image
from .profile import DeviceFeatures, NicProfile, ProfileError, check_backend
from .guest import Guest, Launcher
from .qemu import InNamespace, qemu_argv
from .spec import GuestError, GuestSpec
from .threads import QemuThread, class_times, qemu_threads

__all__ = ["AgentResult", "DeviceFeatures", "Guest", "GuestError", "GuestImage", "GuestImageMissing",
           "GuestNicState", "GuestSpec", "InNamespace", "Launcher", "NicProfile", "ProfileError", "QemuThread", "check_backend", "class_times",
           "decode_feature_bits", "find_image", "qemu_argv", "qemu_threads", "read_guest_nic"]
