"""The `offlab` console script. Kept free of imports so that a Ctrl-C while the lab's
modules load (a second or more: scipy, matplotlib, pyroute2) is one line and exit
130 like any other interruption, not a traceback from the middle of an import."""

import sys

EXIT_INTERRUPTED = 130


def main() -> None:
    try:
        from .cli import main as cli_main
        cli_main()
    except KeyboardInterrupt:
        print("offlab: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
