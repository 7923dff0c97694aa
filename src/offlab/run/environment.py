"""The environment a run happens in: kernel, CPU model, cores, tool versions."""

from __future__ import annotations

import gzip
import os
import platform
import socket
from importlib import metadata
from pathlib import Path

from ..proc import ProcessError, run

_TOOLS = {
    "iperf3": ["iperf3", "--version"],
    "ethtool": ["ethtool", "--version"],
    "ip": ["ip", "-V"],
}


def kernel() -> str:
    return platform.release()


def cpu_model(cpuinfo: str | None = None) -> str:
    """`model name` from /proc/cpuinfo (first core), or the machine type if absent."""
    text = Path("/proc/cpuinfo").read_text() if cpuinfo is None else cpuinfo
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model"):
            return value.strip()
    return platform.machine()


def cores() -> int:
    return os.cpu_count() or 1


def host() -> str:
    return socket.gethostname()


def cpu_accounting(config_text: str | None = None) -> str:
    """How the kernel accounts CPU time ("tick", "tick+irqtime", "virt-gen"), from its
    build config; it decides how exact /proc/stat's softirq and irq columns are."""
    if config_text is None:
        boot, proc = Path(f"/boot/config-{platform.release()}"), Path("/proc/config.gz")
        if boot.exists():
            config_text = boot.read_text()
        elif proc.exists():
            config_text = gzip.decompress(proc.read_bytes()).decode(errors="replace")
        else:
            return "unknown (no kernel config to read)"
    enabled = {line.split("=")[0] for line in config_text.splitlines() if line.endswith("=y")}
    mode = "virt-gen" if "CONFIG_VIRT_CPU_ACCOUNTING_GEN" in enabled else "tick"
    return mode + ("+irqtime" if "CONFIG_IRQ_TIME_ACCOUNTING" in enabled else "")


def tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "kernel cpu accounting": cpu_accounting()}
    for package in ("offlab", "pyroute2"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    for name, args in _TOOLS.items():
        try:
            out = run(args, timeout=5, check=False)
            lines = (out.stdout or out.stderr).strip().splitlines()
            versions[name] = lines[0] if lines else "unknown"
        except ProcessError:
            versions[name] = "missing"
    return versions
