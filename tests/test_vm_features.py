"""Decoding what a guest reports: virtio feature bits, the agent's framing, the image
manifest, QEMU's thread names."""

import base64

import pytest

from offlab.vm.agent import AgentError, FrameParser, encode_request
from offlab.vm.features import decode_feature_bits
from offlab.vm.image import GuestImageMissing, find_image, parse_manifest
from offlab.hosts.proctimes import ProcessTimes
from offlab.vm.threads import class_times, classify, qemu_threads


def bits(*numbers: int, width: int = 64) -> str:
    return "".join("1" if n in numbers else "0" for n in range(width))


def test_feature_bits_decode_to_names_in_bit_order():
    assert decode_feature_bits(bits(0, 1, 7, 11, 15, 32)) == ["CSUM", "GUEST_CSUM", "GUEST_TSO4", "HOST_TSO4",
                                                            "MRG_RXBUF", "VERSION_1"]
    assert decode_feature_bits(bits(8, 12, 9, 10, 14)) == ["GUEST_TSO6", "GUEST_ECN", "GUEST_UFO", "HOST_TSO6",
                                                         "HOST_UFO"]
    assert decode_feature_bits(bits(44) + "\n") == ["BIT_44"]


def test_feature_bits_reject_anything_but_zeros_and_ones():
    with pytest.raises(ValueError):
        decode_feature_bits("0x3")


def frame(request_id: str, out: bytes, err: bytes, status: int) -> bytes:
    def lines(data: bytes) -> bytes:
        text = base64.b64encode(data)
        return b"".join(text[i:i + 76] + b"\n" for i in range(0, len(text), 76))
    return (f"OFLOUT {request_id}\n".encode() + lines(out) + f"OFLERR {request_id}\n".encode() + lines(err)
            + f"OFLEND {request_id} {status}\n".encode())


def test_agent_frames_carry_any_output_in_pieces():
    tricky = b"OFLEND r1 0\nOFLOUT r2\n" * 20  # output that looks like frames
    stream = b"noise before the agent\nOFLHELLO 6.1.0\n" + frame("r1", tricky, b"warn\n", 3)
    parser = FrameParser()
    for i in range(0, len(stream), 7):  # as the serial line delivers it
        parser.feed(stream[i:i + 7])
    assert parser.hello == "6.1.0"
    result = parser.done["r1"]
    assert (result.status, result.stdout.encode(), result.stderr) == (3, tricky, "warn\n")


def test_agent_frames_without_output_and_interleaved_pings():
    parser = FrameParser()
    parser.feed(frame("ping1", b"ready\n", b"", 0) + frame("r1", b"", b"", 0))
    assert parser.done["r1"].stdout == "" and parser.done["ping1"].stdout == "ready\n"


def test_a_frame_cut_short_is_dropped_not_mixed_into_the_next():
    parser = FrameParser()
    parser.feed(b"OFLOUT r1\naGVsbG8=\nOFLERR r9\nOFLEND r1 0\n" + frame("r2", b"ok", b"", 0))
    assert "r1" not in parser.done and parser.done["r2"].stdout == "ok"


def test_an_answer_that_is_not_base64_is_an_agent_error():
    with pytest.raises(AgentError):
        FrameParser().feed(b"OFLOUT r1\n!!!\nOFLERR r1\nOFLEND r1 0\n")


def test_requests_are_one_line_with_the_script_in_base64():
    line = encode_request("r7", 30, "echo 'a b'\nexit 2\n")
    tag, request_id, timeout, script = line.decode().split(" ")
    assert (tag, request_id, timeout) == ("OFLREQ", "r7", "30") and line.endswith(b"\n")
    assert base64.b64decode(script) == b"echo 'a b'\nexit 2\n"


def test_manifest_and_a_missing_image_name_the_fix(tmp_path):
    manifest = parse_manifest("# built …\nkernel 6.1.0-56-cloud-amd64\nmodules virtio_ring virtio_net\n"
                              "package iperf3 3.12-1+deb12u2\n")
    assert manifest["kernel"] == "6.1.0-56-cloud-amd64" and manifest["package iperf3"] == "3.12-1+deb12u2"
    with pytest.raises(GuestImageMissing) as missing:
        find_image(tmp_path)
    assert "make guest" in str(missing.value) and "\n" not in str(missing.value)


def test_qemu_threads_are_classed_by_name(tmp_path):
    assert classify("CPU 0/TCG", 10) == classify("CPU 3/KVM", 10) == "vcpu"
    assert classify("vhost-10", 10) == "vhost" and classify("vhost-11", 10) == "other"
    assert classify("qemu-system-x86", 10) == classify("IO mon_iothread", 10) == "other"
    def stat(tid: int, name: str, usr: int, sys: int) -> str:
        return f"{tid} ({name}) R " + " ".join(["0"] * 10) + f" {usr} {sys} 0 0\n"
    for tid, name in ((10, "qemu-system-x86"), (11, "CPU 0/TCG"), (12, "vhost-10")):
        (tmp_path / "10" / "task" / str(tid)).mkdir(parents=True)
        (tmp_path / "10" / "task" / str(tid) / "comm").write_text(name + "\n")
        (tmp_path / "10" / "task" / str(tid) / "stat").write_text(stat(tid, name, tid, 1))
    (tmp_path / "99").mkdir()  # a kernel vhost worker of QEMU 10 (before Linux 6.4)
    (tmp_path / "99" / "comm").write_text("vhost-10\n")
    (tmp_path / "99" / "stat").write_text(stat(99, "vhost-10", 5, 7))
    found = qemu_threads(10, proc=tmp_path)
    assert [t.tid for t in found["vcpu"]] == [11]
    assert [t.tid for t in found["vhost"]] == [12, 99]
    assert [t.tid for t in found["other"]] == [10]
    assert class_times(found, 10, proc=tmp_path) == {"vcpu": ProcessTimes(11, 1), "vhost": ProcessTimes(17, 8),
                                                     "other": ProcessTimes(10, 1)}
