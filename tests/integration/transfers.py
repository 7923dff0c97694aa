"""Content checks between two running guests (vm.Guest): a file over TCP and datagrams
over UDP, each compared end to end."""

from __future__ import annotations

import time


def tcp_file_arrives(sender, receiver, receiver_ip: str, port: int = 5001, kib: int = 4096) -> bool:
    """`kib` KiB of random bytes over one TCP connection; True when the receiver's md5
    is the sender's. busybox nc -e: the stream goes to a program and nc ends with the
    connection (its stdin, /dev/null under the agent, would end it at once otherwise)."""
    sender.run(f"dd if=/dev/urandom of=/tmp/blob bs=1024 count={kib} 2>/dev/null")
    sent = sender.run("md5sum /tmp/blob").stdout.split()[0]
    receiver.run(f"rm -f /tmp/got; echo 'cat > /tmp/got' > /tmp/sink.sh; "
                 f"(nc -l -p {port} -e sh /tmp/sink.sh &); sleep 0.2")
    sender.run(f"nc {receiver_ip} {port} < /tmp/blob", timeout=90)
    for _ in range(20):  # the receiver may still be writing the last bytes
        if receiver.run("md5sum /tmp/got", check=False).stdout.split()[:1] == [sent]:
            return True
        time.sleep(0.5)
    return False


def udp_datagrams_arrive(sender, receiver, receiver_ip: str, port: int = 5002) -> bool:
    """Twenty numbered datagrams and one 8000-byte datagram (IP-fragmented at MTU
    1500), each intact and in order (netcat-openbsd: busybox's nc has no UDP)."""
    receiver.run(f"rm -f /tmp/udp /tmp/udp-big; (nc.openbsd -u -l {port} > /tmp/udp &); "
                 f"(nc.openbsd -u -l {port + 1} > /tmp/udp-big &); sleep 0.2")
    sender.run(f"for n in $(seq 1 20); do echo \"datagram $n\"; sleep 0.02; done "
               f"| nc.openbsd -u -q 1 {receiver_ip} {port}", timeout=20)
    sender.run("head -c 8000 /dev/urandom > /tmp/udp-big")
    sent = sender.run("md5sum /tmp/udp-big").stdout.split()[0]
    sender.run(f"nc.openbsd -u -q 1 {receiver_ip} {port + 1} < /tmp/udp-big", timeout=20)
    small = receiver.run("cat /tmp/udp").stdout == "".join(f"datagram {n}\n" for n in range(1, 21))
    big = receiver.run("md5sum /tmp/udp-big").stdout.split()[0] == sent
    receiver.run("kill $(pidof nc.openbsd)", check=False)
    return small and big
