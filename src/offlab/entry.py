"""The `offlab` console script. Kept free of imports so that a Ctrl-C while the lab's
modules load (a second or more: scipy, matplotlib, pyroute2) is one line and exit
130 like any other interruption, not a traceback from the middle of an import."""

import signal
import sys

EXIT_INTERRUPTED = 130


def caused_by_ctrl_c(failure: BaseException) -> bool:
    """Whether `failure` is a Ctrl-C or was raised from one: an extension module whose
    initialisation a Ctrl-C stops (scipy's pybind11 modules) raises `ImportError:
    initialization failed` from the KeyboardInterrupt."""
    seen: BaseException | None = failure
    for _ in range(8):  # a cause chain is short; never loop on a cycle
        if seen is None:
            return False
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__
    return False


def main() -> None:
    try:
        from .cli import main as cli_main
        cli_main()
    except SystemExit:
        raise
    except BaseException as failure:
        if not caused_by_ctrl_c(failure):
            raise
        print("offlab: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        # Everything is done and said: a Ctrl-C from here on could only interrupt the
        # interpreter's own teardown, which would die by the signal without a word.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
