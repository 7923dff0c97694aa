"""The host's end of the guest agent (guest/agent.sh), over the guest's second serial
port, which QEMU exposes as a unix socket. Requests and answers are lines; the script,
its stdout and its stderr travel in base64, so no output can look like a frame:

    host → guest:  OFLREQ <id> <timeout_s> <base64 script>
    guest → host:  OFLOUT <id>, base64 lines, OFLERR <id>, base64 lines, OFLEND <id> <status>

Lines outside a frame (the agent's OFLHELLO, noise from before it started) are ignored,
and so are answers to ids nobody waits for (readiness pings sent while booting)."""

from __future__ import annotations

import base64
import socket
import time
from dataclasses import dataclass


class AgentError(Exception):
    """The agent did not answer, or answered something that is not a frame."""


@dataclass(frozen=True)
class AgentResult:
    status: int
    stdout: str
    stderr: str


def encode_request(request_id: str, timeout_s: int, script: str) -> bytes:
    encoded = base64.b64encode(script.encode()).decode()
    return f"OFLREQ {request_id} {int(timeout_s)} {encoded}\n".encode()


class FrameParser:
    """Turns the agent's byte stream into finished answers, keyed by request id."""

    def __init__(self) -> None:
        self._pending = b""
        self._current: str | None = None
        self._section: str | None = None
        self._parts: dict[str, list[str]] = {}
        self.done: dict[str, AgentResult] = {}
        self.hello: str | None = None

    def feed(self, data: bytes) -> None:
        self._pending += data
        *lines, self._pending = self._pending.split(b"\n")
        for raw in lines:
            self._line(raw.decode("ascii", errors="replace").strip())

    def _line(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        tag = words[0]
        if tag == "OFLHELLO":
            self.hello = " ".join(words[1:])
        elif tag in ("OFLOUT", "OFLERR") and len(words) == 2:
            if tag == "OFLOUT":
                self._current, self._parts = words[1], {"out": [], "err": []}
            elif self._current != words[1]:
                self._current = None  # an OFLERR without its OFLOUT: a frame cut short
            self._section = "out" if tag == "OFLOUT" else "err"
        elif tag == "OFLEND" and len(words) == 3 and words[1] == self._current and _integer(words[2]):
            self.done[words[1]] = AgentResult(int(words[2]), _decode(self._parts["out"]),
                                              _decode(self._parts["err"]))
            self._current = self._section = None
        elif self._current is not None and self._section is not None:
            self._parts[self._section].append(line)


def _integer(text: str) -> bool:
    return text.isdigit()


def _decode(lines: list[str]) -> str:
    try:
        return base64.b64decode("".join(lines), validate=True).decode(errors="replace")
    except ValueError as err:
        raise AgentError(f"the agent's answer is not base64 ({err})") from None


class AgentChannel:
    """One connection to the agent's serial port; requests are answered one at a time.
    This one is a unix socket QEMU listens on; a subclass carries the same frames over
    another byte stream (vm/remote.py: QEMU's stdio over SSH) by overriding `_write`,
    `_read` and `close`."""

    def __init__(self, path: str):
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(path)
        except OSError:
            self._sock.close()
            raise
        self._parser = FrameParser()
        self._serial = 0

    def _write(self, data: bytes) -> None:
        self._sock.sendall(data)

    def _read(self, timeout: float) -> bytes | None:
        """Bytes from the guest, b"" when the other end closed, None when none came in time."""
        self._sock.settimeout(timeout)
        try:
            return self._sock.recv(65536)
        except socket.timeout:
            return None

    def send(self, script: str, timeout_s: int, prefix: str = "r") -> str:
        self._serial += 1
        request_id = f"{prefix}{self._serial}"
        self._write(encode_request(request_id, timeout_s, script))
        return request_id

    def wait(self, request_ids: set[str] | str, deadline: float) -> tuple[str, AgentResult] | None:
        """The first of `request_ids` answered before `deadline` (time.monotonic), or None."""
        wanted = {request_ids} if isinstance(request_ids, str) else request_ids
        while True:
            for request_id in wanted:
                if request_id in self._parser.done:
                    return request_id, self._parser.done.pop(request_id)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            data = self._read(min(left, 1.0))
            if data is None:
                continue
            if not data:
                raise AgentError("the guest closed the agent's serial port (QEMU exited?)")
            self._parser.feed(data)

    def request(self, script: str, timeout_s: int) -> AgentResult:
        request_id = self.send(script, timeout_s)
        # The guest kills the command at timeout_s; the margin covers the serial line.
        answer = self.wait(request_id, time.monotonic() + timeout_s + 15)
        if answer is None:
            raise AgentError(f"no answer from the agent within {timeout_s + 15} s")
        return answer[1]

    def close(self) -> None:
        self._sock.close()
