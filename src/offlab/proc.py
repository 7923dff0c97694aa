"""The one place that runs processes: argument lists (never a shell string), timeouts,
and errors that name the command, its exit status and the tail of its stderr."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Sequence

DEFAULT_TIMEOUT_S = 30.0


class ProcessError(Exception):
    """A command that could not be started, timed out or exited non-zero."""

    def __init__(self, args: Sequence[str], reason: str):
        self.args_list = list(args)
        self.reason = reason
        super().__init__(f"`{' '.join(self.args_list)}` {reason}")


@dataclass(frozen=True)
class Completed:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run(
    args: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    check: bool = True,
    input_text: str | None = None,
) -> Completed:
    """Run a command to completion and capture its output as text."""
    try:
        proc = subprocess.run(
            list(args),
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=None if input_text is not None else subprocess.DEVNULL,
        )
    except FileNotFoundError as err:
        raise ProcessError(args, f"could not start: {err.strerror} (is it installed?)") from err
    except subprocess.TimeoutExpired as err:
        raise ProcessError(args, f"timed out after {timeout:g} s") from err
    done = Completed(tuple(args), proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise ProcessError(args, f"exited with status {proc.returncode}: {_tail(proc.stderr)}")
    return done


def spawn(args: Sequence[str], *, capture_stdout: bool = False) -> subprocess.Popen[str]:
    """Start a long-running command (servers, a client we poll); stderr is captured so a
    failure can be explained. The caller owns the process and must call `stop`."""
    try:
        return subprocess.Popen(
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            # Own process group: a Ctrl-C on the terminal reaches only offlab, which
            # then stops its children in order instead of racing them.
            start_new_session=True,
        )
    except FileNotFoundError as err:
        raise ProcessError(args, f"could not start: {err.strerror} (is it installed?)") from err


def stop(proc: subprocess.Popen[str], *, grace_s: float = 2.0) -> None:
    """Terminate a spawned process, killing it if it does not exit within `grace_s`."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace_s)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _tail(text: str, limit: int = 300) -> str:
    text = " ".join(text.strip().split())
    return text[-limit:] if text else "(no error output)"
