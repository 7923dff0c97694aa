"""W5's peer: DPDK testpmd as the vhost-user backend, configured per row.

`Setup` is everything that differs between two testpmd runs (EAL and application
flags, vhost vdev options, the commands fed at its prompt). `tuned(row)` is the
configuration W5 measures: each setting is there because DPDK 22.11's source or
documentation says it makes this workload faster (docs/benchmarks.md, W5, lists the
reasons and what was tried). `SHIPPED` is the configuration W5 used before (seed
004's), kept so the tuning can be re-measured. Python standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

TESTPMD = "dpdk-testpmd"
GSO_SEGMENT = 1514  # `set gso segsz`: whole frame, 1448 B of TCP payload
NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")
HUGEPAGES_WANTED = 768  # 2 MiB pages: 1.5 GiB, what the no-hugepage runs give EAL (-m 1536)


@dataclass(frozen=True)
class Setup:
    """One testpmd configuration; `commands` are typed at its interactive prompt."""
    name: str
    eal: tuple[str, ...]
    app: tuple[str, ...]
    vdev: tuple[str, ...]            # options after iface= on both net_vhost vdevs
    fwd: str = "csum"                # `set fwd`
    rx_offload: bool = False         # `port config 0 rx_offload tcp_cksum/udp_cksum on`
    huge_dir: str | None = None      # hugetlbfs mount (`hugepages()`); None: --no-huge
    # `set fwd MODE retry` + `set burst tx delay US retry N`: (US, N), or None for none.
    tx_retry: tuple[int, int] | None = None

    def commands(self, gro: bool, gso: bool) -> str:
        cmds = ["port stop all"]
        if self.rx_offload:
            # The source negotiates VIRTIO_NET_F_CSUM: without an Rx checksum offload
            # the vhost PMD sums every received L4 payload in software
            # (vhost_dev_csum_configure, rx_sw_csum).
            cmds += ["port config 0 rx_offload tcp_cksum on",
                     "port config 0 rx_offload udp_cksum on"]
        if self.fwd == "csum":
            for port in (0, 1):
                cmds += [f"csum set ip sw {port}", f"csum set tcp hw {port}"]
        if gro:
            cmds += ["set port 0 gro on", "set gro flush 1"]
        if gso:
            cmds += ["set port 1 gso on", f"set gso segsz {GSO_SEGMENT}"]
        retry = ""
        if self.tx_retry:
            # With retry the forwarding engine calls rte_eth_tx_burst again, N times
            # US microseconds apart, for what the sink's ring did not take, instead of
            # freeing it at once as fwd_dropped (csumonly.c, iofwd.c).
            delay_us, retries = self.tx_retry
            cmds.append(f"set burst tx delay {delay_us} retry {retries}")
            retry = " retry"
        cmds += [f"set fwd {self.fwd}{retry}", "port start all", "start"]
        return "\n".join(cmds) + "\n"

    def argv(self, sockets: list[str], prefix: str) -> list[str]:
        # On hugepages EAL takes memory as the pools need it (a fixed -m must find all
        # its pages free at start, which a shared machine does not promise).
        eal = (["--huge-dir", self.huge_dir, *self.eal] if self.huge_dir
               else ["--no-huge", "-m", "1536", *self.eal])
        vdevs = [arg for i, s in enumerate(sockets)
                 for arg in ("--vdev", ",".join([f"net_vhost{i}", f"iface={s}", *self.vdev]))]
        return [TESTPMD, *eal, f"--file-prefix={prefix}", *vdevs, "--", *self.app]

    def shown(self) -> str:
        """The command line as the docs print it (sockets A and B)."""
        argv = self.argv(["A", "B"], "…")
        return " ".join(argv)


_EAL = ("--no-pci", "-l", "0-1", "--log-level=lib.eal:error")

# Seed 004's testpmd as W5 first ran it: csum forwarding, bursts of 64, 2 KiB mbufs.
SHIPPED = Setup("shipped", _EAL, ("-i", "--total-num-mbufs=16384", "--burst=64"),
                ("queues=1", "tso=1"))

# W5's testpmd. Each choice is argued in docs/benchmarks.md (W5, "testpmd at its best"):
# - rx_offload: no software Rx checksum in the vhost PMD (rte_eth_vhost.c);
# - --burst=32: 32 × 45 GSO segments fit testpmd's 2048-entry GSO output array
#   (csumonly.c, GSO_MAX_PKT_BURST); larger bursts make rte_gso_segment fail and
#   testpmd frees the packet without counting a drop; 32 is also the vhost PMD's
#   own dequeue chunk (VHOST_MAX_PKT_BURST);
# - ext-buffer=1: a 64 KiB frame goes into one external buffer instead of a chain
#   of 2 KiB mbufs (virtio_dev_pktmbuf_prep);
# - --mbcache=512: the largest per-lcore mempool cache (RTE_MEMPOOL_CACHE_MAX_SIZE).
def _app(burst: int) -> tuple[str, ...]:
    return ("-i", "--total-num-mbufs=16384", f"--burst={burst}", "--mbcache=512")


TUNED = Setup("tuned", _EAL, _app(32), ("queues=1", "tso=1", "ext-buffer=1"), rx_offload=True)


def tuned(mode: str, huge_dir: str | None = None) -> Setup:
    """W5's testpmd for a row forwarded in offlab-fwd's `mode` (gro, gso or pass).

    - gro: bursts of 64 (no GSO, so the 2048-segment array does not bound it; testpmd's
      GRO merges within one burst, and 64 matches offlab-fwd's batch and merge depth —
      32 merges 3.75 segments per frame at 8 flows where both merge 6.92 with 64);
    - gso: 64 KiB mbufs (`--mbuf-size=65535`, the largest data room) instead of
      ext-buffer: with ext-buffer=1 testpmd forwarded nothing on the GSO rows;
    - pass: csum forwarding as the other rows. DPDK's own vhost-to-vhost pass (`io` with
      `legacy-ol-flags=1`, `IO_PASS`) keeps the GSO type, but its super-packets fail the
      sink's checks (the TCP pseudo-header seed lacks the length: the vhost library's
      enqueue runs `rte_net_intel_cksum_prepare`, whose TSO convention is a NIC's)."""
    setup = replace(TUNED, huge_dir=huge_dir)
    if mode == "gro":
        setup = replace(setup, name="tuned-gro", app=_app(64))
    if mode == "gso":
        setup = replace(setup, name="tuned-gso", vdev=("queues=1", "tso=1"),
                        app=("-i", "--total-num-mbufs=8192", "--burst=32", "--mbcache=512",
                             "--mbuf-size=65535"))
    return setup


# testpmd's own retry defaults (testpmd.h: BURST_TX_WAIT_US, BURST_TX_RETRIES).
TX_RETRY_DEFAULT = (1, 64)


# W5 rows whose tuned testpmd retries its transmit bursts: (delay in us, retries).
# Measured per row against the same setup without retry, alternated beside offlab-fwd
# (docs/benchmarks.md, W5, "What was tried"): 10 us × 256 (at most 2.56 ms per burst) is
# kept where it was faster by median, or removed loss without being slower — GSO partial
# and full checksums (loss 54–64 % and up to 21 % → under 0.3 %), pass (up to 45 % → 0),
# GRO 64 flows, VXLAN and no GSO. On GRO 1 and 8 flows and no GRO 8 flows retry was slower
# or even, with nothing to win back on loss, so they go without.
_RETRY = (10, 256)
TX_RETRY_ROWS: dict[str, tuple[int, int]] = {
    key: _RETRY for key in ("gso_partial", "gso_full", "pass_tso", "gro_f64", "nogso",
                            "vxlan_nogro_f8")}


def with_retry(setup: Setup, retry: tuple[int, int] = TX_RETRY_DEFAULT) -> Setup:
    """`setup` with testpmd's transmit retry on, `retry` = (delay in us, retries)."""
    return replace(setup, name=f"{setup.name}-retry{retry[0]}x{retry[1]}", tx_retry=retry)


# DPDK's own pass between two vhost ports; measured, not used (see `tuned`).
IO_PASS = replace(TUNED, name="io-legacy", fwd="io", rx_offload=False,
                  vdev=(*TUNED.vdev, "legacy-ol-flags=1"))


@contextlib.contextmanager
def hugepages(pages: int = HUGEPAGES_WANTED):
    """Reserves 2 MiB pages and mounts a private hugetlbfs for testpmd's memory, and
    gives both back afterwards; yields the mount, or None when the kernel granted
    fewer pages or the mount failed (the caller then runs without hugepages)."""
    before = int(NR_HUGEPAGES.read_text())
    mount = tempfile.mkdtemp(prefix="ofl-w5-huge-")
    mounted = False
    try:
        NR_HUGEPAGES.write_text(str(before + pages))
        if int(NR_HUGEPAGES.read_text()) - before < pages:
            yield None
            return
        mounted = subprocess.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev",
                                  mount], capture_output=True).returncode == 0
        yield mount if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", mount], check=False)
        os.rmdir(mount)
        NR_HUGEPAGES.write_text(str(before))


def port_counters(out: str) -> dict:
    """`show port stats all` → what W5 needs from testpmd's two ports."""
    rx = [int(v) for v in re.findall(r"RX-bytes:\s+(\d+)", out)]
    tx = [int(v) for v in re.findall(r"TX-bytes:\s+(\d+)", out)]
    dropped = [int(v) for v in re.findall(r"TX-dropped:\s+(\d+)", out)]
    # Port 0 receives from the source, port 1 sends to the sink. DPDK's vhost library
    # copies every received byte into mbufs and every sent byte into guest buffers
    # (GRO chains mbufs, GSO makes indirect ones: neither copies payload).
    return {"copied": (rx[0] + tx[1]) if len(rx) > 1 and len(tx) > 1 else None,
            "delivered": tx[1] if len(tx) > 1 else None,
            "dropped": max(dropped) if dropped else None}


def version() -> str:
    """The installed dpdk-dev package's version (testpmd prints none of its own)."""
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "dpdk-dev"],
                          capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"
