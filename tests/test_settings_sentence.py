"""The report's settings line says what was applied on real hosts, never what was asked."""

from offlab.records import RunSettings
from offlab.report.sections import settings_sentence


def test_local_runs_say_the_plan_setting():
    assert "steered to the receiving host's core" in settings_sentence(RunSettings(3))
    assert "where the kernel puts it" in settings_sentence(RunSettings(3, steer_rx_softirq=False))


def test_real_hosts_say_what_each_host_applied():
    facts = {"sender": {"receive steering": "none: receive processing where the NIC's IRQs put it"},
             "receiver": {"receive steering": "RPS of ens1's receive queues to core 1 (the application's)"}}
    line = settings_sentence(RunSettings(3, hosts="ssh"), facts)
    assert "receiver: RPS of ens1's receive queues to core 1" in line
    assert "sender: none" in line and "steered to the receiving host's core" not in line
