"""The `offlab` console script. Kept free of imports so that a Ctrl-C while the lab's
modules load (a second or more: scipy, matplotlib, pyroute2) is one line and exit
130 like any other interruption, not a traceback from the middle of an import."""

import signal
import sys

EXIT_INTERRUPTED = 130


def main() -> None:
    try:
        from .cli import main as cli_main
        cli_main()
    except KeyboardInterrupt:
        print("offlab: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        # Everything is done and said: a Ctrl-C from here on could only interrupt the
        # interpreter's own teardown, which would die by the signal without a word.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
