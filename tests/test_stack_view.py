"""The report's stack view: what every host shared once, then per topology what differed."""

from offlab.report.stack import stack_sections


def test_shared_settings_once_and_per_topology_differences():
    stack = {"bare · MTU 1500": {"tx": {"cc": "bbr", "dev.ofl-v0.mtu": "1500"},
                                 "rx": {"cc": "bbr", "dev.ofl-v1.mtu": "1500"}},
             "vxlan · MTU 1500": {"tx": {"cc": "bbr"}, "rx": {"cc": "bbr"}}}
    (section,) = stack_sections(stack)
    (common_caption, common), (place, table) = section.tables
    assert common.rows == (("cc", "bbr"),) and place == "bare · MTU 1500"
    assert table.header == ("Setting", "tx", "rx")
    assert table.rows == (("dev.ofl-v0.mtu", "1500", "–"), ("dev.ofl-v1.mtu", "–", "1500"))
    assert stack_sections({}) == []
