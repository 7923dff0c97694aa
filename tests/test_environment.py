"""Environment facts recorded with every run."""

from offlab.run import environment


def test_cpu_model_from_cpuinfo_and_fallback():
    assert environment.cpu_model("processor\t: 0\nmodel name\t: Test CPU @ 2GHz\n") == "Test CPU @ 2GHz"
    assert environment.cpu_model("processor\t: 0\n")  # falls back to the machine type


def test_cpu_accounting_modes():
    assert environment.cpu_accounting("CONFIG_TICK_CPU_ACCOUNTING=y\n") == "tick"
    assert environment.cpu_accounting("CONFIG_IRQ_TIME_ACCOUNTING=y\n") == "tick+irqtime"
    assert environment.cpu_accounting(
        "CONFIG_VIRT_CPU_ACCOUNTING_GEN=y\n# CONFIG_IRQ_TIME_ACCOUNTING is not set\n") == "virt-gen"


def test_tool_versions_name_every_tool():
    versions = environment.tool_versions()
    assert {"python", "offlab", "pyroute2", "iperf3", "ethtool", "ip"} <= set(versions)
