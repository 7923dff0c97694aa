"""One long-lived shell session on a host that runs the lab's commands one after the
other: one SSH session for a whole run instead of one per command.

Why: each SSH session, even over a multiplexed connection, makes sshd start the login
user's shell, which reads that user's rc files before it runs the command (bash sources
~/.bashrc for a command sent over ssh). On the test rig's servers that file runs
`pyenv init` twice: 250 of the 300 ms a command cost there, and a run sends hundreds
(docs/design-notes.md). A user's `conda init` or any slow rc file costs the same on a
real server. Through a channel that cost is paid once per connection.

What goes through it is exactly the command line an SSH session would have run (the
lease's token check, `sudo -n`, the PATH prefix: ssh.py), run by `sh` in a subshell with
stdin from /dev/null (or the caller's input, as a here-document), its stdout and stderr
into files, then framed back: `@offlab-done ID STATUS OUT_BYTES ERR_BYTES` and those
bytes. A command that does not end in time, or a session that closes in the middle of
one, ends the channel (ssh.py then reports it as it reported a one-off session's); the
next command opens a new one. A controller killed outright leaves nothing: the remote
shell reads end-of-file and exits, its temporary directory (`offlab-channel.*` in
$TMPDIR or /tmp) removed on the way out.
"""

from __future__ import annotations

import os
import secrets
import select
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO, Sequence

DONE = b"@offlab-done"
READY = "@offlab-channel-ready"
START_TIMEOUT_S = 20.0
WAIT_S = 0.5
"""How long a command waits for the channel while another thread's is on it: a few of
its commands (a heartbeat's takes milliseconds), not a long one."""

_PRELUDE = """\
d=$(mktemp -d "${{TMPDIR:-/tmp}}/offlab-channel.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
trap 'exit 1' HUP INT TERM PIPE
echo {ready}
"""


class ChannelClosed(Exception):
    """The channel ended (timed out, or its session closed) before a command's result
    came back: whether the command ran is unknown. `reason` says which."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class ChannelTimeout(ChannelClosed):
    """The command did not end in its time (the channel is ended with it)."""

    def __init__(self) -> None:
        super().__init__("timed out")


@dataclass(frozen=True)
class Result:
    status: int
    stdout: str
    stderr: str


class Channel:
    """A shell on the far end of `argv` (for SSH: the ssh client's arguments up to the
    destination, `--`, `sh`), commands sent on its stdin and results read back from its
    stdout. One command at a time: `try_run` waits up to WAIT_S for another thread's
    command to end, then returns None (the caller sends its command the one-off way, so a
    heartbeat never waits behind a long command, and a command never waits long behind
    a heartbeat)."""

    def __init__(self, argv: Sequence[str]):
        self.argv = list(argv)
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._errors: IO[bytes] | None = None
        self._busy = threading.Lock()
        self._count = 0

    @staticmethod
    def usable_input(input_text: str | None) -> bool:
        """Input a here-document carries unchanged: none, or text ending in a newline."""
        return input_text is None or input_text == "" or input_text.endswith("\n")

    def try_run(self, line: str, input_text: str | None, timeout: float) -> Result | None:
        """Run the shell command `line` with `input_text` on its stdin; None when the
        channel is busy with another thread's command or could not be opened (the caller
        runs it the one-off way and gets that way's error). Raises ChannelClosed when the
        command was sent and its result never came."""
        if not self.usable_input(input_text) or not self._busy.acquire(timeout=WAIT_S):
            return None
        try:
            if not self._open():
                return None
            return self._run(line, input_text or "", timeout)
        finally:
            self._busy.release()

    def _open(self) -> bool:
        if self._process is not None and self._process.poll() is None:
            return True
        self._end()
        token = secrets.token_hex(8)
        self._errors = tempfile.TemporaryFile()
        # A session of its own: a Ctrl-C at the terminal reaches offlab, which then still
        # has the channel to restore the servers through.
        self._process = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._errors, bufsize=0, start_new_session=True)
        try:
            self._send(_PRELUDE.format(ready=f"{READY}-{token}"))
            deadline = time.monotonic() + START_TIMEOUT_S
            # Whatever the login's rc files print comes first: skipped up to the marker.
            while True:
                line = self._read_line(deadline)
                if line.strip() == f"{READY}-{token}".encode():
                    return True
        except ChannelClosed:
            self._end()
            return False

    def _run(self, line: str, input_text: str, timeout: float) -> Result:
        self._count += 1
        mark = f"{self._count}-{secrets.token_hex(4)}"
        if input_text:
            delimiter = f"OFFLAB_INPUT_{secrets.token_hex(8)}"
            feed = f" <<'{delimiter}'\n{input_text}{delimiter}\n"
        else:
            feed = " </dev/null\n"
        # The line on a line of its own inside the subshell: a comment or a here-document
        # in it cannot swallow the redirections.
        script = (f"(\n{line}\n) >\"$d/o\" 2>\"$d/e\"{feed}"
                  f"printf '{DONE.decode()} %s %s %s %s\\n' {mark} \"$?\" "
                  f"\"$(wc -c <\"$d/o\")\" \"$(wc -c <\"$d/e\")\"; cat \"$d/o\" \"$d/e\"\n")
        deadline = time.monotonic() + timeout
        try:
            self._send(script)
            while True:
                words = self._read_line(deadline).split()
                if len(words) == 5 and words[0] == DONE and words[1] == mark.encode():
                    break
            status, out_bytes, err_bytes = (int(word) for word in words[2:])
            out = self._read_exactly(out_bytes, deadline)
            err = self._read_exactly(err_bytes, deadline)
        except ChannelClosed:
            self._end()
            raise
        return Result(status, out.decode(errors="replace"), err.decode(errors="replace"))

    def _send(self, text: str) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(text.encode())
        except (BrokenPipeError, OSError):
            raise ChannelClosed(self._closed_reason()) from None

    def _fill(self, deadline: float) -> None:
        assert self._process is not None and self._process.stdout is not None
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self._process.stdout], [], [], left)[0]:
            raise ChannelTimeout()
        chunk = os.read(self._process.stdout.fileno(), 65536)
        if not chunk:
            raise ChannelClosed(self._closed_reason())
        self._buffer += chunk

    def _read_line(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            self._fill(deadline)
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _read_exactly(self, size: int, deadline: float) -> bytes:
        while len(self._buffer) < size:
            self._fill(deadline)
        found, self._buffer = self._buffer[:size], self._buffer[size:]
        return found

    def _closed_reason(self) -> str:
        """The session's own last words (ssh's error), else that it closed."""
        said = ""
        if self._errors is not None:
            self._errors.seek(0)
            said = self._errors.read().decode(errors="replace").strip()[-200:]
        return said or "the session closed"

    def _end(self) -> None:
        process, self._process, self._buffer = self._process, None, b""
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()
        if self._errors is not None:
            self._errors.close()
            self._errors = None

    def close(self) -> None:
        """End the remote shell (end of its input: it removes its directory and exits)."""
        with self._busy:
            process = self._process
            if process is not None and process.poll() is None and process.stdin is not None:
                try:
                    process.stdin.close()
                    process.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    pass  # killed below: the remote shell then reads end-of-file all the same
            self._end()
