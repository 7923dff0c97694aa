"""The store's one error type, shared by every storage module and the CLI."""


class StoreError(Exception):
    """A results store that cannot be used (unreachable, newer format, unknown run,
    bad status); the message is one line with the fix."""
